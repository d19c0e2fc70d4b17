#!/usr/bin/env bash
# Drive `localreason mcp` with the MCP Inspector's headless CLI mode: a client other than ours.
#
#   bench/check_mcp_inspector.sh            # a fresh temporary library of the bundled samples
#   bench/check_mcp_inspector.sh ~/library  # an existing library folder (LOCALREASON_HOME)
#
# Needs node and npx; the first run downloads the inspector (INSPECTOR=... to use another version;
# 2.12.0 asks for Node 22 but works on Node 20 with engine warnings). Each step starts a new server.
# The inspector hands the server almost no environment, so LOCALREASON_HOME is passed with -e.
# Its exit codes: 0 ok, 5 the tool returned an error result, 6 (--strict) a schema portability error.
# The script stops at the first unexpected exit code.
set -euo pipefail

INSPECTOR="${INSPECTOR:-@modelcontextprotocol/inspector@2.12.0}"
QUESTION="${QUESTION:-Where did the Black Death originate?}"
LOCALREASON="${LOCALREASON:-$(command -v localreason || true)}"
export MCP_INSPECTOR_SECRET_STORE="${MCP_INSPECTOR_SECRET_STORE:-memory}"  # no OS keychain prompts
if [ -z "$LOCALREASON" ]; then
    echo "The localreason command is not on PATH (pip install -e .)." >&2
    exit 2
fi

home="${1:-}"
if [ -z "$home" ]; then
    home="$(mktemp -d -t localreason-inspector-XXXXXX)"
    samples="$(python -c 'from localreason.demo import samples_dir; print(samples_dir())')"
    echo "== ingesting the bundled samples into $home"
    "$LOCALREASON" --home "$home" ingest "$samples" --collection samples --exclude 'LICENSES*' --quiet
fi

# A client configuration, as a desktop assistant would hold it. The inspector's requests time out
# after 60 s unless the server entry sets requestTimeout; a first reason loads both models and, on a
# slow or busy machine, can take longer than that.
config="$(mktemp -t localreason-inspector-XXXXXX.json)"
trap 'rm -f "$config"' EXIT
cat >"$config" <<EOF
{"mcpServers": {"localreason": {"command": "$LOCALREASON", "args": ["mcp"],
                                "env": {"LOCALREASON_HOME": "$home"}, "requestTimeout": 300000}}}
EOF

inspector() {
    npx -y "$INSPECTOR" --cli "$@" 2> >(grep -v -e 'EBADENGINE' -e '^npm warn' >&2)
}

step() {
    local expect="$1" title="$2"
    shift 2
    echo
    echo "== $title"
    local started=$SECONDS rc=0
    inspector "$@" || rc=$?
    echo "-- exit code $rc (expected $expect), $((SECONDS - started)) s"
    if [ "$rc" != "$expect" ]; then
        echo "Unexpected exit code from the inspector." >&2
        exit 1
    fi
}

server=(-e "LOCALREASON_HOME=$home" "$LOCALREASON" mcp)
step 0 "tools/list (with the inspector's schema portability check)" "${server[@]}" --method tools/list --strict
step 0 "tools/call deep_search" "${server[@]}" --method tools/call --tool-name deep_search \
    --tool-arg "query=$QUESTION" --tool-arg limit=3
step 0 "tools/call reason (loads both models first)" --config "$config" --server localreason \
    --method tools/call --tool-name reason --tool-arg "query=$QUESTION"
step 5 "tools/call deep_read of a chunk the library does not hold (an error result)" "${server[@]}" \
    --method tools/call --tool-name deep_read --tool-arg chunkId=chk_aaaaaaaaaaaaaaaa
step 5 "tools/call deep_search with a blank query (an error result)" "${server[@]}" \
    --method tools/call --tool-name deep_search --tool-arg "query=   "

echo
echo "All inspector checks passed (server log: $home/logs/mcp.log)."
