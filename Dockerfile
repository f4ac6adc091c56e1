# syntax=docker/dockerfile:1
# The agentrt runtime image: every service compiled to JavaScript (scripts/build-prod.sh, the
# same script test/image/production-tree.test.ts runs and checks), the web UI built, production
# dependencies only, run as a non-root user on a read-only root filesystem. The chart's default
# image is what this builds; each service runs `node services/<service>/dist/main.mjs` from /app.
#
#   docker build -t registry.example.com/agentrt:0.1.0 .
#   docker push registry.example.com/agentrt:0.1.0

ARG NODE_IMAGE=node:20-bookworm-slim

# --- build: the full workspace, installed from the lockfile ------------------------------------
FROM ${NODE_IMAGE} AS build
ENV PNPM_HOME=/pnpm PATH=/pnpm:$PATH CI=1
RUN corepack enable && corepack prepare pnpm@12.21.0 --activate
WORKDIR /src
# Manifests first, so the dependency layer is reused while only sources change.
COPY pnpm-lock.yaml pnpm-workspace.yaml package.json ./
COPY packages/agent-core/package.json packages/agent-core/
COPY packages/capability-sdk/package.json packages/capability-sdk/
COPY packages/contract/package.json packages/contract/
COPY packages/gateway-proto/package.json packages/gateway-proto/
COPY packages/service-kit/package.json packages/service-kit/
COPY packages/streams/package.json packages/streams/
COPY packages/testing/package.json packages/testing/
COPY services/agent-reducer/package.json services/agent-reducer/
COPY services/capability-host/package.json services/capability-host/
COPY services/llm-driver/package.json services/llm-driver/
COPY services/web-gateway/package.json services/web-gateway/
COPY test/package.json test/
COPY bench/package.json bench/
COPY examples examples
RUN --mount=type=cache,id=pnpm,target=/pnpm/store pnpm install --frozen-lockfile
COPY . .
RUN --mount=type=cache,id=pnpm,target=/pnpm/store bash scripts/build-prod.sh /app

# --- runtime: the production tree and node, nothing else ---------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
# The chart runs as 10001 with readOnlyRootFilesystem and an emptyDir on /tmp; the same user
# here makes `docker run` behave alike. Files stay root-owned and read-only for the service.
RUN groupadd --system --gid 10001 agentrt && useradd --system --uid 10001 --gid agentrt --no-create-home --home-dir /tmp agentrt
WORKDIR /app
COPY --from=build --chown=root:root /app /app
RUN chmod -R a-w,a+rX /app
USER 10001:10001
EXPOSE 8080 8081 9464
# The chart sets the command per service; this default runs the gateway.
CMD ["node", "services/web-gateway/dist/main.mjs"]
