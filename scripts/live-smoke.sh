#!/usr/bin/env bash
# make live-smoke: one paginator run on a real model, for users with a key.
# At most 12 requests and an estimated $0.50; the run's artifacts are scanned for the
# key before they are kept. Environment: docs/MODELS.md ("Live smoke run").
set -euo pipefail
cd "$(dirname "$0")/.."

MAX_REQUESTS=12
MAX_COST_USD=0.50
PROVIDER="${PROVIDER:-anthropic}"
KEEP_DIR="${LIVE_SMOKE_DIR:-live-smoke}"
TASK="Fix the pagination bug: page 1 must start at the first item."

fail() { echo "live-smoke: $*" >&2; exit 2; }

case "$PROVIDER" in
  anthropic) KEY_ENV=ANTHROPIC_API_KEY ;;
  openai) KEY_ENV=OPENAI_API_KEY ;;
  *) fail "PROVIDER must be anthropic or openai, not '$PROVIDER'" ;;
esac
[ -n "${MODEL:-}" ] || fail "set MODEL to the model to try, e.g. MODEL=claude-haiku-4-5 (docs/MODELS.md)"
[ "${SANDBOX_AGENT_OFFLINE:-}" = "0" ] || fail "set SANDBOX_AGENT_OFFLINE=0 to allow network calls"
[ -n "${!KEY_ENV:-}" ] || fail "$KEY_ENV is not set: export it in the environment"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
args=(run --fixture paginator --task "$TASK" --provider "$PROVIDER" --model "$MODEL"
      --max-iterations "$MAX_REQUESTS" --max-cost-usd "$MAX_COST_USD"
      --experiment-budget-usd "$MAX_COST_USD" --ledger "$work/ledger.sqlite3"
      --max-calls "$MAX_REQUESTS" --trace-dir "$work/runs" --json)
[ -z "${BASE_URL:-}" ] || args+=(--base-url "$BASE_URL")
[ -z "${PRICE_IN:-}" ] || args+=(--price-per-mtok-in "$PRICE_IN")
[ -z "${PRICE_OUT:-}" ] || args+=(--price-per-mtok-out "$PRICE_OUT")

set +e
.venv/bin/sandbox-agent "${args[@]}" >"$work/result.json" 2>"$work/stderr.txt"
code=$?
set -e
[ "$code" -ne 2 ] || { cat "$work/stderr.txt" >&2; exit 2; }

# The key is read by grep from a pipe (printf is a builtin): never in any process's argv.
key="${!KEY_ENV}"
if [ "${#key}" -ge 8 ] && grep -rlF -f <(printf '%s\n' "$key") "$work" >"$work/.leaks" 2>/dev/null; then
  echo "live-smoke: the key was found in the run's artifacts; they were deleted:" >&2
  sed "s|^$work/||" "$work/.leaks" >&2
  exit 3
fi
rm -f "$work/.leaks"

requests="$(.venv/bin/sandbox-agent ledger --json --ledger "$work/ledger.sqlite3" |
  .venv/bin/python -c 'import json,sys; d=json.load(sys.stdin); print(sum(e["requests"] for e in d["experiments"]), d["prices_as_of"], sum(e["settled_usd"]+e["reserved_usd"] for e in d["experiments"]))')"
read -r count prices_as_of cost <<<"$requests"

mkdir -p "$KEEP_DIR"
kept="$KEEP_DIR/$(date -u +%Y%m%dT%H%M%SZ)-$PROVIDER"
cp -r "$work" "$kept"
status="$(.venv/bin/python -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["status"], "-", r["reason"])' "$work/result.json" || echo unknown)"
echo "live-smoke: $status"
printf 'live-smoke: %s requests, estimated cost $%.4f (an estimate from the price table dated %s)\n' \
  "$count" "$cost" "$prices_as_of"
echo "live-smoke: artifacts scanned for the key and kept in $kept"
exit "$code"
