#!/usr/bin/env bash
# CI's container step: builds artest's image with podman (ci/build-image.sh),
# checks its revision label is the host binary's, runs --quick on the host backend inside it, makes a failing repro bundle
# outside with the host binary (--inject skip-last), reruns it inside
# (ci/repro-in-image.sh --run, which exits 0 with a "reproduced:" line when
# the rerun failed as the bundle recorded) and checks that the verdicts
# match: exit status 1 outside, the same case ID, the same first failure (rank, kind, index,
# got and want bits), the same artest revision. Where no container engine can run (podman missing and
# not installable, or it cannot start a container), it prints one
# "image-test: skipped: ..." line and exits 0.
#
#   ci/image-test.sh [OUTDIR]       (default: bin/image-test)
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
# shellcheck source=ci/image-env.sh
source ci/image-env.sh

# Open MPI refuses to run as root unless told; CI runs as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

out=${1:-bin/image-test}
case_id=oneshot/f32/sum/4KiB/oop-reg-plain/np2
start=$SECONDS

skip() { echo "image-test: skipped: $*"; exit 0; }
fail() { echo "image-test: FAIL: $*" >&2; exit 1; }
# step NAME LOG CMD...: runs CMD with its output in LOG, at most 10 minutes
# (artest's own watchdog ends a hung case sooner), prints its time; its
# status is returned (124: timed out).
step() {
	local name=$1 log=$2 t=$SECONDS rc=0
	shift 2
	timeout 600 "$@" >"$log" 2>&1 || rc=$?
	echo "image-test: $name: exit $rc, $((SECONDS - t)) s"
	return "$rc"
}

# first_failure prints what a JSON report says of its first failing case.
first_failure() {
	python3 -c 'import json, sys
for c in json.load(open(sys.argv[1]))["cases"]:
    if c["verdict"] != "pass":
        f = c["failures"][0]
        m = (f.get("mismatches") or [{}])[0]
        print(c["id"], c["verdict"], "rank", f["rank"], f["kind"],
              "index", m.get("index"), "got", m.get("got_bits"), "want", m.get("want_bits"))
        break' "$1"
}

ci/install-podman.sh >/dev/null 2>&1 || skip "podman, runc or debootstrap missing and not installable here (ci/install-podman.sh)"
image_conf bin/image
rm -rf "$out"
mkdir -p "$out/bundle" "$out/rerun"

step base "$out/base.log" ci/make-base-image.sh || { cat "$out/base.log" >&2; fail "the base image could not be made"; }
probe=$(podman run "${image_run_flags[@]}" localhost/artest-base:bookworm true 2>&1) ||
	skip "podman cannot start a container here: $(head -n1 <<<"$probe")"
step image "$out/image.log" ci/build-image.sh || { tail -n 20 "$out/image.log" >&2; fail "the image could not be built"; }
tail -n2 "$out/image.log" | head -n1
image=$(tail -n1 "$out/image.log")
label=$(podman image inspect --format '{{index .Config.Labels "org.opencontainers.image.revision"}}' "$image")
host_rev=$(bin/artest --version | sed -n 's/^artest [^ ]* (\([^,]*\),.*/\1/p')
[[ $label == "$host_rev" ]] || fail "$image is labelled revision '$label', bin/artest is '$host_rev'"

step quick-in-image "$out/quick.log" podman run "${image_run_flags[@]}" "$image" \
	mpirun --oversubscribe -np 2 artest --backend host --quick ||
	{ tail -n 20 "$out/quick.log" >&2; fail "--quick inside $image failed"; }
tail -n1 "$out/quick.log"

rc=0
step bundle-outside "$out/first.log" mpirun -np 2 --oversubscribe bin/artest --backend host --case "$case_id" \
	--inject skip-last --repro-dir "$out/bundle" --json "$out/first.json" || rc=$?
[[ $rc == 1 ]] || fail "the planted failure outside exited $rc, not 1 (see $out/first.log)"
bundle=$(ls "$out"/bundle/artest-repro-*.json 2>/dev/null | head -n1 || true)
[[ -n $bundle ]] || fail "no repro bundle in $out/bundle"

rc=0
step rerun-in-image "$out/rerun.log" ci/repro-in-image.sh --run "$bundle" "$out/rerun" || rc=$?
[[ $rc == 0 ]] && grep -q '^repro-in-image: reproduced: ' "$out/rerun.log" ||
	{ tail -n 20 "$out/rerun.log" >&2; fail "the rerun inside exited $rc, not 0 with a reproduced: line"; }

outside=$(first_failure "$out/first.json" || true)
inside=$(first_failure "$out/rerun/rerun.json" || true)
echo "image-test: outside: $outside"
echo "image-test: inside:  $inside"
[[ -n $outside && $outside == "$inside" && $outside == "$case_id "* ]] || fail "the verdicts differ"
revision() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["header"]["git_revision"])' "$1"; }
[[ $(revision "$out/first.json") == "$(revision "$out/rerun/rerun.json")" ]] ||
	fail "the rerun inside ran artest $(revision "$out/rerun/rerun.json"), the bundle's is $(revision "$out/first.json")"
echo "image-test: pass: $image; the bundle reproduced inside with the same verdict; $((SECONDS - start)) s"
