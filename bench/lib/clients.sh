# Sourced by the bench scripts that run one keep-alive client at a time
# against the nginx of serve.sh: the floor example's command line, and how
# each client's output says how many responses it took. Needs `floor`,
# `port` (serve.sh) where the floor runs.
# shellcheck shell=bash

# The floor example as client $1 (floorN: waiting for N answers a look;
# floorNs: the same receiving with kernel stamps, as throng does) for $2
# seconds over $3 connections (100 unless given).
floor_command() {
  local w=${1#floor} c=${3:-100}
  case $w in
    *s) echo "$floor 127.0.0.1:$port /index.html $c $2 ${w%s} stamped";;
    *)  echo "$floor 127.0.0.1:$port /index.html $c $2 $w";;
  esac
}

# Responses client $1 reports in its output file $2.
responses() {
  case $1 in
    throng*|base) python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["completed"])' "$2";;
    floor*)       awk '{print $2}' "$2";;
    wrk*)         awk '/requests in/ {print $1}' "$2";;
    *) echo "no count of responses for $1" >&2; exit 2;;
  esac
}
