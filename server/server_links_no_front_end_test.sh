#!/usr/bin/env bash
# kilnd's RPC handlers (//server:server) must link no front end and no IR: modules are parsed only
# in kiln-worker. Reads the genquery of //server:server's dependencies.
set -euo pipefail
deps="server/server_deps"
[ -s "$deps" ] || { echo "no dependency list at $deps"; exit 1; }
forbidden='^//compiler/(frontend|script|relax|ir|wire|backend|tir)[:/]'
if grep -E "$forbidden" "$deps"; then
  echo "FAIL: //server:server depends on the targets above (front ends and IR belong in kiln-worker)"
  exit 1
fi
# The query must have seen the handlers' own sources, or it proves nothing.
grep -q '^//server:client_service.cc$' "$deps" || { echo "the query did not list //server:server"; exit 1; }
echo "//server:server links $(grep -c '^//' "$deps") targets, none of them a front end or the IR"
