#!/usr/bin/env bash
# Installs the non-Python Kafka clients' system dependencies from Debian packages:
#   kcat                  (librdkafka's command-line client)
#   default-jre-headless  (only if `java` is missing; Kafka 4.x needs Java 17+)
#   maven                 (only if `mvn` is missing; tools/kafka_jars.py uses it)
#   zookeeper             (ZooKeeper's server, for Gregor clusters: tools/zookeeper.py)
# Idempotent: when every command is already present it exits at once, without
# touching apt. Non-interactive; needs root (CI runs as root) or passwordless sudo.
set -euo pipefail

missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
[ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

loud() {
    {
        echo
        echo "######################################################################"
        echo "# tools/install_debian.sh: $*"
        echo "# Missing packages: ${missing[*]}"
        echo "# Install them by hand:  apt-get update && apt-get install -y ${missing[*]}"
        echo "######################################################################"
        echo
    } >&2
}

if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
else
    loud "cannot install: not root and no passwordless sudo."
    exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
    loud "cannot install: apt-get not found (not a Debian-based system)."
    exit 1
fi

echo "tools/install_debian.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! "${SUDO[@]}" apt-get update -q \
    || ! "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"; then
    loud "apt-get failed."
    exit 1
fi

for cmd in kcat java mvn; do
    if ! command -v "$cmd" >/dev/null 2>&1; then
        loud "'$cmd' is still missing after apt-get install."
        exit 1
    fi
done
