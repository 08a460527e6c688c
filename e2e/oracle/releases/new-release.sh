#!/usr/bin/env bash
# Writes the go.mod of an oracle release module: k8s.io/kubernetes at the
# given version, every staging module it replaces with ./staging/src pinned
# to the matching published v0.x release, and the harness from ../..
#
#   e2e/oracle/releases/new-release.sh v1.21.14
#
# Write releases/v1.21/main.go (NewScheme) first or afterwards, then run
# `go mod tidy` in the new directory.
set -euo pipefail
version=${1:?usage: new-release.sh v1.MINOR.PATCH}
[[ $version =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "new-release.sh: want v1.MINOR.PATCH, got $version" >&2; exit 2; }
minor=${BASH_REMATCH[1]}
patch=${BASH_REMATCH[2]}
staging=v0.$minor.$patch
dir="$(cd "$(dirname "$0")" && pwd)/v1.$minor"
gomod=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
[[ -n $gomod ]] || { echo "new-release.sh: go mod download k8s.io/kubernetes@$version gave no go.mod" >&2; exit 1; }
goversion=$(go env GOVERSION | sed 's/^go//')
mkdir -p "$dir"
{
	echo "module github.com/mvpctl/mvpctl/e2e/oracle/releases/v1.$minor"
	echo
	echo "go $goversion"
	echo
	echo "require ("
	echo "	github.com/mvpctl/mvpctl/e2e/oracle v0.0.0"
	echo "	k8s.io/kubernetes $version"
	echo ")"
	echo
	echo "// The harness, and every staging module that k8s.io/kubernetes $version replaces"
	echo "// with ./staging/src (a consumer must pin each to the published $staging)."
	echo "replace ("
	echo "	github.com/mvpctl/mvpctl/e2e/oracle => ../.."
	sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/src/.*$#\t\1 => \1 '"$staging"'#p' "$gomod" | sort -u
	echo ")"
} > "$dir/go.mod"
echo "wrote $dir/go.mod"
