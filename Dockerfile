# syntax=docker/dockerfile:1.7
# The Stowage server image: `stowage server` in-cluster, `stowage run-plugins` for the built-in
# plugins (same binary), third-party plugin executables in /plugins.
#
#   docker build -t stowage:0.1.0 .
#
# Runs as UID 65532 on a read-only root filesystem. The server writes to /scratch (run logs, HOME
# and TMPDIR) and /var/spool/stowage (run logs whose upload failed, kept for retry); plugins, which
# start without TMPDIR, put their sockets in /tmp. deploy/ and the chart mount an emptyDir on each.
# test/deploy/dockerfile.test.ts checks this file without Docker.

ARG NODE_IMAGE=node:24-bookworm-slim

# Compiles TypeScript to dist/.
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# Production dependencies only, from the same lockfile.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOME=/scratch \
    TMPDIR=/scratch \
    STOWAGE_SCRATCH_DIR=/scratch \
    STOWAGE_LOG_SPOOL_DIR=/var/spool/stowage \
    STOWAGE_PLUGIN_DIR=/plugins \
    NODE_OPTIONS=--max-semi-space-size=16 \
    MALLOC_MMAP_THRESHOLD_=131072
WORKDIR /app
# package.json carries "type": "module", which dist/ needs.
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY deploy/crds ./deploy/crds
# The Helm chart's pre-upgrade hook (upgradeCRDs) runs this to apply the CRDs above.
COPY scripts/helm/upgrade-crds.mjs ./bin/upgrade-crds.mjs
# A file rather than a heredoc: Debian bookworm's buildah (1.28) cannot parse heredocs. Its mode
# (0755) comes from the build context.
COPY scripts/image/stowage /usr/local/bin/stowage
RUN install -d -m 0755 /plugins \
 && install -d -m 0770 -o 65532 -g 65532 /scratch /var/spool/stowage
USER 65532:65532
EXPOSE 8085
ENTRYPOINT ["stowage"]
CMD ["server"]
