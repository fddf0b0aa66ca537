#!/usr/bin/env bash
# Make sure cmake and a C++ compiler are there for 'make model' (llama-server from source).
#
# - Both present: nothing is changed.
# - Otherwise, as root on Debian/Ubuntu: apt-get install cmake g++ make.
# - Neither possible: one line that says what to install, exit 2.
set -euo pipefail

say() { printf 'ensure-build-tools: %s\n' "$*" >&2; }
die() { printf 'ensure-build-tools: %s\n' "$*" >&2; exit 2; }

if command -v cmake >/dev/null 2>&1 && command -v c++ >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  die "cmake and g++ are needed to build llama-server: install them (apt-get install cmake g++), then run 'make model' again"
fi
say "installing cmake and g++ from Debian"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake g++ make >/dev/null
