# Shared helpers for the project's scripts. Source it: `. "$(dirname "$0")/lib.sh"`.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOCAL_DIR="$REPO_ROOT/.local"
VENV="$LOCAL_DIR/venv"
# How to get a Node.js within the engines (>=20 <23). Not the distribution's package: apt's nodejs is
# 18 on Debian 12 and Ubuntu 24.04. One place for every message that says it (docs/deploy.md lists the same where it says what the procedure needs).
NODE_INSTALL_HINT="not apt-get install nodejs, which is Node.js 18 on Debian 12 and Ubuntu 24.04: nvm (https://github.com/nvm-sh/nvm: curl -o- https://raw.githubusercontent.com/nvm-sh/nvm/v0.40.1/install.sh | bash, then nvm install 22), NodeSource on Debian/Ubuntu (curl -fsSL https://deb.nodesource.com/setup_22.x | sudo -E bash - && sudo apt-get install -y nodejs), or on macOS brew install node@22, which is keg-only (brew puts it on no PATH): then brew link --overwrite --force node@22, or add "'export PATH="$(brew --prefix node@22)/bin:$PATH"'" to ~/.bash_profile"
export SOPHIA_REPO_ROOT="$REPO_ROOT"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

need() { command -v "$1" >/dev/null 2>&1 || die "$1 is required: $2"; }

# The SHA-256 of a file, as hex: GNU coreutils' sha256sum, else shasum -a 256 (macOS has no
# sha256sum). scripts/check-bash32 flags a direct call anywhere else.
sha256() {
  if command -v sha256sum >/dev/null 2>&1; then # bash32: portable
    sha256sum "$1" | cut -d' ' -f1 # bash32: portable
  else
    shasum -a 256 "$1" | cut -d' ' -f1
  fi
}

# `with_timeout SECONDS command...`: runs the command, stops it (TERM, by its PID) after SECONDS
# and then returns 124, as GNU coreutils' `timeout` does (macOS has no `timeout`); otherwise
# returns the command's status. The command runs in the background: its stdin is not the
# terminal.
with_timeout() {
  local seconds="$1" pid tenths=0 status=0
  shift
  "$@" &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$tenths" -ge $((seconds * 10)) ]; then
      kill -TERM "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      return 124
    fi
    sleep 0.1
    tenths=$((tenths + 1))
  done
  wait "$pid" || status=$?
  return "$status"
}

# The Lambda functions declarations/queues.json declares, one name per line (the one list the
# Pulumi program, the build and the lint share).
lambda_functions() {
  python3 -c '
import json, sys
for f in json.load(open(sys.argv[1]))["functions"]:
    print(f["name"])' "$REPO_ROOT/declarations/queues.json"
}

# The stages declarations/stages.json declares (the one place production's name is: `prod-rs`).
# `stage_fact production.stage|production.environment|production.roleVariable|protectedStages`
# prints the value (a list one per line).
stage_fact() {
  python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v[k]
print("\n".join(v) if isinstance(v, list) else v)' "$REPO_ROOT/declarations/stages.json" "$1"
}
# A stage's GitHub environment: production's (`production`) for the production stage, else its name.
stage_environment() {
  if [ "$1" = "$(stage_fact production.stage)" ]; then stage_fact production.environment; else printf '%s\n' "$1"; fi
}
# Exit 0 when the stage's data is protected by its name (protectedStages).
is_protected_stage() {
  local stages s
  stages=$(stage_fact protectedStages) || die "cannot read declarations/stages.json"
  for s in $stages; do [ "$s" != "$1" ] || return 0; done
  return 1
}

# Creates the project's Python venv (idempotent).
ensure_venv() {
  need python3 "install Python 3 (Debian: apt-get install python3 python3-venv)"
  if [ ! -x "$VENV/bin/python" ]; then
    log "creating Python venv at .local/venv"
    # The venv's pip is the one Python bundles (ensurepip, no download); it is not upgraded from
    # the index: an unpinned `pip install --upgrade pip` would run whatever pip PyPI serves that day
    # before any hash is checked. Every package is installed --require-hashes.
    python3 -m venv "$VENV" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
  fi
}

# Installs a pinned requirements file into the venv once per content hash. A file that carries
# --hash= lines is installed with --require-hashes (every wheel checked against its recorded hash).
pip_install_pinned() {
  local req="$1" stamp="$LOCAL_DIR/stamps/$(basename "$1").$(sha256 "$1" | cut -c1-16)" hashes=()
  ensure_venv
  grep -q -- '--hash=' "$req" && hashes=(--require-hashes --only-binary=:all:)
  if [ ! -f "$stamp" ]; then
    log "pip install ${hashes[*]:-} -r ${req#"$REPO_ROOT"/}"
    "$VENV/bin/pip" install -q ${hashes[@]+"${hashes[@]}"} -r "$req"
    mkdir -p "$LOCAL_DIR/stamps" && touch "$stamp"
  fi
}

# npm ci in a folder with a committed lock, once per lock hash. --ignore-scripts: no package's install
# script runs (the deploy path installs with AWS credentials at hand). None is needed: @pulumi/* have
# none; esbuild's postinstall only checks the binary that npm already installed from its
# platform-specific optional dependency; protobufjs's only prints notices.
npm_ci_pinned() {
  local dir="$1" stamp
  need npm "install Node.js 22 and npm (package.json engines: >=20 <23; $NODE_INSTALL_HINT)"
  stamp="$LOCAL_DIR/stamps/npm-$(echo "$dir" | tr / _).$(sha256 "$dir/package-lock.json" | cut -c1-16)"
  if [ ! -f "$stamp" ] || [ ! -d "$dir/node_modules" ]; then
    log "npm ci in ${dir#"$REPO_ROOT"/}"
    (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
    mkdir -p "$LOCAL_DIR/stamps" && touch "$stamp"
  fi
}
