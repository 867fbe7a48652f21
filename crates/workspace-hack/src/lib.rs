//! Empty. Its manifest, written by `cargo hakari generate`, names each
//! third-party crate with the union of the features any workspace build asks
//! of it, so that the unit tests, the extension, the sidecar and the e2e tests
//! share one compiled copy of each instead of one per feature set.
