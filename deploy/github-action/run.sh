#!/usr/bin/env bash
# The GitHub Action's step (action.yml): builds mvpctl from the action's
# checkout (its version is the action's ref) unless MVPCTL_BIN names one,
# runs `mvpctl scan` or `mvpctl lint` with SARIF output, prints the
# findings as annotations, and writes the step's outputs. It exits 0
# whatever mvpctl found: action.yml uploads the report first, then fails
# the job on exit-code. Inputs come as environment variables, never
# interpolated into the script:
#   INPUT_COMMAND     scan or lint
#   INPUT_ARGS        the command's arguments, split on whitespace
#   INPUT_SARIF_FILE  where the report goes (relative to GITHUB_WORKSPACE)
#   MVPCTL_VERSION    the version the binary reports (github.action_ref)
#   MVPCTL_BIN        an mvpctl to use instead of building one
set -euo pipefail

command=${INPUT_COMMAND:-scan}
case "$command" in
scan | lint) ;;
*)
	echo "::error::mvpctl action: command must be scan or lint, not '$command'"
	exit 2
	;;
esac
sarif=${INPUT_SARIF_FILE:-mvpctl.sarif}
read -r -a args <<<"${INPUT_ARGS:-}"
action_path=${GITHUB_ACTION_PATH:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "${GITHUB_WORKSPACE:-.}"

mvpctl=${MVPCTL_BIN:-}
if [ -z "$mvpctl" ]; then
	mvpctl="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/mvpctl-action/mvpctl"
	version=${MVPCTL_VERSION:-dev}
	echo "::group::build mvpctl $version"
	(cd "$action_path" && go build \
		-ldflags "-X github.com/mvpctl/mvpctl/cmd/mvpctl/cli.version=$version" \
		-o "$mvpctl" ./cmd/mvpctl)
	echo "::endgroup::"
fi
"$mvpctl" version

mkdir -p "$(dirname "$sarif")"
code=0
"$mvpctl" "$command" "${args[@]}" -o sarif >"$sarif" || code=$?
findings=$(grep -c '"ruleId"' "$sarif" || true)
if [ "$code" -eq 1 ]; then
	# The same findings as annotations on the run and the pull request.
	"$mvpctl" "$command" "${args[@]}" -o github || true
fi
if [ "$code" -ge 2 ]; then
	echo "::error::mvpctl $command ${args[*]} could not run (exit $code)"
fi
{
	echo "sarif-file=$sarif"
	echo "exit-code=$code"
	echo "findings=$findings"
} >>"${GITHUB_OUTPUT:-/dev/stdout}"
echo "mvpctl $command: exit $code, $findings findings in $sarif"
