# syntax=docker/dockerfile:1
# The HTTP sidecar `vigil-sidecar` on Debian bookworm-slim, as a non-root user.
#
#   docker build -f docker/sidecar.Dockerfile -t vigil-sidecar .    (from the repository root)
#   docker run -e DATABASE_URL=postgres://vigil_app:...@HOST:5432/vigil -p 8080:8080 vigil-sidecar
#
# Settings come from the environment as in sidecar/src/config.rs (DATABASE_URL,
# VIGIL_POOL_SIZE, VIGIL_TLS_CERT/VIGIL_TLS_KEY, VIGIL_RATE_*, VIGIL_TRUSTED_PROXIES,
# VIGIL_CORS_ORIGINS, RUST_LOG, ...). The same image runs the admin command:
#   docker run --rm -e VIGIL_ADMIN_DATABASE_URL=... vigil-sidecar keys list

ARG RUST_IMAGE=rust:1.95-bookworm

FROM ${RUST_IMAGE} AS builder
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release -p vigil-sidecar --locked \
    && install -m 0755 target/release/vigil-sidecar /usr/local/bin/vigil-sidecar

FROM debian:bookworm-slim
# curl: for the health check (GET /healthz). Package versions follow the base image's
# Debian release (security updates), hence unpinned.
# hadolint ignore=DL3008
RUN set -eux; \
    apt-get update; \
    apt-get install -y --no-install-recommends ca-certificates curl; \
    rm -rf /var/lib/apt/lists/*; \
    groupadd --system --gid 10001 vigil; \
    useradd --system --uid 10001 --gid vigil --home-dir /nonexistent --no-create-home \
        --shell /usr/sbin/nologin vigil
COPY --from=builder /usr/local/bin/vigil-sidecar /usr/local/bin/vigil-sidecar
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["vigil-sidecar"]
CMD ["serve", "--listen", "0.0.0.0:8080"]
