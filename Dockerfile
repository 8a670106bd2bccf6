# agentbe daemon image (docs/daemon.md, "Docker image").
#
#   docker build -t agentbe .
#   docker run -p 3001:3001 -e AUTH_TOKEN=$(openssl rand -hex 32) agentbe
#
# Build arguments: INCLUDE_SSHD (true) adds openssh-server configured for
# --conventional-ssh; AGENTBE_VERSION (local) is the version /health reports;
# AGENTBE_REVISION (empty) is the VCS revision it reports under
# build.revision (.git is not in the build context: pass
# --build-arg AGENTBE_REVISION=$(git rev-parse HEAD)).
# The daemon is a static Go binary built in the first stage: running it needs
# no Node; Node 20, pnpm and tsx are installed for the agents' own use.

ARG INCLUDE_SSHD=true
ARG AGENTBE_VERSION=local
ARG AGENTBE_REVISION=

FROM golang:1.26 AS build
ARG AGENTBE_VERSION
ARG AGENTBE_REVISION
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.version=${AGENTBE_VERSION} -X main.revision=${AGENTBE_REVISION}" \
      -o /out/agent-backend ./cmd/agent-backend

FROM ubuntu:22.04
ARG INCLUDE_SSHD
ARG AGENTBE_VERSION
ENV DEBIAN_FRONTEND=noninteractive

RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates sudo curl wget tree ripgrep git python3 python3-pip \
      bubblewrap gnupg \
 && curl -fsSL https://deb.nodesource.com/setup_20.x | bash - \
 && apt-get install -y --no-install-recommends nodejs \
 && npm install -g pnpm tsx \
 && if [ "$INCLUDE_SSHD" = "true" ]; then \
      apt-get install -y --no-install-recommends openssh-server; \
    fi \
 && rm -rf /var/lib/apt/lists/*

# Build-time sshd configuration (only with INCLUDE_SSHD=true).
RUN set -e; \
    if [ "$INCLUDE_SSHD" = "true" ]; then \
      mkdir -p /var/run/sshd /run/sshd; \
      ssh-keygen -A; \
      sed -i -E \
        -e 's/^#?PermitRootLogin .*/PermitRootLogin yes/' \
        -e 's/^#?PasswordAuthentication .*/PasswordAuthentication yes/' \
        -e 's/^#?PubkeyAuthentication .*/PubkeyAuthentication yes/' \
        -e 's/^#?ListenAddress 0\.0\.0\.0.*/ListenAddress 0.0.0.0/' \
        /etc/ssh/sshd_config; \
      grep -q '^ListenAddress 0.0.0.0' /etc/ssh/sshd_config || echo 'ListenAddress 0.0.0.0' >> /etc/ssh/sshd_config; \
      mkdir -p /etc/ssh/sshd_config.d; \
      printf '%s\n' 'PasswordAuthentication yes' 'PermitRootLogin yes' 'ChallengeResponseAuthentication yes' \
        'MaxSessions 64' 'MaxStartups 10:30:100' 'ClientAliveInterval 60' 'ClientAliveCountMax 3' \
        > /etc/ssh/sshd_config.d/agentbe.conf; \
      sed -i -E 's/^(session\s+)required(\s+pam_loginuid\.so)/\1optional\2/' /etc/pam.d/sshd; \
      install -d -m 700 /root/.ssh; \
      install -m 600 /dev/null /root/.ssh/authorized_keys; \
      echo 'root:agents' | chpasswd; \
    fi

COPY --from=build /out/agent-backend /usr/local/bin/agent-backend
COPY docker-entrypoint.sh /docker-entrypoint.sh
RUN chmod 755 /docker-entrypoint.sh /usr/local/bin/agent-backend \
 && install -d -m 755 -o root -g root /var/workspace /docker-entrypoint.d

ENV AGENTBE_VERSION=${AGENTBE_VERSION}
WORKDIR /var/workspace
EXPOSE 3001 22
HEALTHCHECK --interval=30s --timeout=10s --start-period=5s --retries=3 \
  CMD curl -f http://localhost:${PORT:-3001}/health || exit 1

ENTRYPOINT ["/docker-entrypoint.sh"]
CMD ["agent-backend", "daemon"]
