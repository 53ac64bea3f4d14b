# syntax=docker/dockerfile:1
#
# sms-worker container image.
#   docker build --build-arg VERSION=0.1.0 --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ) -t sms-worker:0.1.0 .
#
# Pin NODE_IMAGE by digest in CI (node:24-bookworm-slim@sha256:...) for reproducible builds.
ARG NODE_IMAGE=node:24-bookworm-slim

# ---------------------------------------------------------------------------------------------
# Build stage: full dependency tree (TypeScript, ...), compile, then drop devDependencies.
# `npm ci` also installs the `node` devDependency (a Node binary for dev machines); it is removed
# by the prune and never reaches the runtime image.
# ---------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
ENV npm_config_update_notifier=false \
    npm_config_fund=false \
    npm_config_audit=false
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build \
 && npm prune --omit=dev \
 && test -f dist/cli/main.js

# ---------------------------------------------------------------------------------------------
# Runtime stage: same Debian/Node base as the build (no native-module ABI surprises), production
# dependencies + compiled JS + Avro schemas only, owned by root and read-only to the app user.
# ---------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ARG NODE_IMAGE
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
ARG SOURCE=https://github.com/sms-worker/sms-worker
LABEL org.opencontainers.image.title="sms-worker" \
      org.opencontainers.image.description="Kafka worker that sends text messages and voice verification codes through the messaging service, with exactly one result per command." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="${NODE_IMAGE}"

ENV NODE_ENV=production \
    HTTP_PORT=9464

# Dedicated unprivileged user (numeric, so runAsNonRoot can verify it). npm, npx and corepack
# are not needed at runtime: remove them to shrink the attack surface.
RUN groupadd --system --gid 10001 sms-worker \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin sms-worker \
 && rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
      /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /opt/yarn-* \
      /usr/local/bin/yarn /usr/local/bin/yarnpkg

WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json LICENSE ./
COPY schemas ./schemas

# V8's compile cache, filled here for the runtime user (Node keys it by version, architecture and
# uid) and read-only to it: a new pod reads its modules' compiled code instead of compiling them
# again, CPU a new pod otherwise takes from the pods that work (src/cli/compile-cache.ts).
ENV NODE_COMPILE_CACHE=/app/.compile-cache
RUN install -d -o 10001 -g 10001 /app/.compile-cache
USER 10001:10001
RUN node --input-type=module -e "await (await import('./dist/cli/compile-cache.js')).loadShippedModules()"
USER root
RUN find /app/.compile-cache -type f | grep -q . \
 && chown -R root:root /app/.compile-cache \
 && chmod -R a-w,a+rX /app/.compile-cache

USER 10001:10001
EXPOSE 9464

# Docker/Compose only (Kubernetes uses the chart's probes). No shell, no curl: plain node.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.HTTP_PORT || 9464) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# Exec form: node is PID 1 and receives SIGTERM directly (graceful drain, commit, leave group).
ENTRYPOINT ["node", "dist/cli/main.js"]
CMD ["run"]
