#!/usr/bin/env bash
# Prints (and with --run, runs) the one command that reruns a repro bundle
# inside artest's image: the bundle mounted read-only at /in/bundle.json, an
# output folder at /out for the rerun's bundles and its JSON report
# (/out/rerun.json). The image is localhost/artest:REV of bin/artest, built
# by ci/build-image.sh when missing.
#
#   ci/repro-in-image.sh [--run] BUNDLE [OUTDIR]
#
# BUNDLE and OUTDIR are relative to the directory it is started from.
# OUTDIR defaults to bin/repro-image/<bundle name> in the repository. A
# host-backend bundle runs with a private 1 GiB /dev/shm (--shm-size); a
# cuda-backend bundle with the GPUs through CDI (--device
# nvidia.com/gpu=all; with Docker: --gpus all) and the host's IPC namespace
# (--ipc=host, for CUDA IPC). The environment the bundle's run recorded
# (the -x NAME=VALUE of its command: ARTEST_* variables, such as a
# plugin's planted bug) is passed into the container (-e NAME=VALUE) and on
# to the ranks (mpirun -x NAME). A bundle of a plugin variant (--plugin
# PATH or --plugin=PATH in its flags) is refused: the image holds no
# plugins.
#
# With --run it runs the command and ends with one verdict line, comparing
# the rerun (its exit status and /out/rerun.json) with what the bundle
# recorded:
#   0  reproduced: the case failed (or hung) again as the bundle recorded
#   1  not reproduced: it passed (or was skipped) in the image; or it failed
#      another way than recorded (the rerun's 1 or 3 is then the status)
#   2  usage: a missing or invalid bundle, a plugin bundle, bin/artest missing
#   other: the container's own status when the rerun reached no verdict
#      (2 usage and 4 environment from artest, 125 to 127 from podman, ...)
#
# Environment: ARTEST_BIN, the artest binary whose revision names the image
# (default bin/artest in the repository).
set -euo pipefail

die() { echo "repro-in-image: $*" >&2; exit 2; }

run=0
if [[ ${1:-} == --run ]]; then
	run=1
	shift
fi
[[ $# -ge 1 && $# -le 2 ]] || die "usage: ci/repro-in-image.sh [--run] BUNDLE [OUTDIR]"

# Paths given are the caller's: resolve them before changing directory.
bundle=$(realpath -e "$1" 2>/dev/null) || die "$1: no such bundle"
[[ -f $bundle ]] || die "$1: not a file"
out=
if [[ $# -ge 2 ]]; then
	out=$(realpath -m "$2")
fi
artest_bin=${ARTEST_BIN:-}
if [[ -n $artest_bin ]]; then
	artest_bin=$(realpath -m "$artest_bin")
fi

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
# shellcheck source=ci/image-env.sh
source ci/image-env.sh

# bundle_info prints, NUL-separated, what the script needs of the bundle:
# its artest_repro format, case, ranks, header.backend and
# header.git_revision; the first --plugin flag of its args in either form
# (--plugin PATH, --plugin=PATH; Go's flags take one dash too), or ""; then
# the NAME=VALUE pairs its command exported to the ranks: mpirun -np N
# [--oversubscribe] [-x NAME=VALUE ...] BINARY ARGS (internal/repro's
# Launch). Nothing for a file that is not a JSON object.
bundle_info() {
	python3 -c 'import json, re, shlex, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError:
    sys.exit(0)
if not isinstance(d, dict):
    sys.exit(0)
h = d.get("header") if isinstance(d.get("header"), dict) else {}
s = lambda v: "" if v is None else str(v)
info = [s(d.get("artest_repro")), s(d.get("case")), s(d.get("ranks")), s(h.get("backend")), s(h.get("git_revision"))]
args = d.get("args") if isinstance(d.get("args"), list) else []
plugin = ""
for i, a in enumerate(args):
    name, eq, _ = s(a).lstrip("-").partition("=")
    if s(a).startswith("-") and name == "plugin":
        plugin = s(a) if eq else " ".join(s(w) for w in args[i:i + 2])
        break
info.append(plugin)
try:
    words = shlex.split(s(d.get("command")))
except ValueError:
    words = []
i = 3 if words[:2] == ["mpirun", "-np"] else len(words)
while i < len(words):
    if words[i] == "--oversubscribe":
        i += 1
    elif words[i] == "-x" and i + 1 < len(words):
        if re.match(r"[A-Za-z_][A-Za-z0-9_]*=", words[i + 1]):
            info.append(words[i + 1])
        i += 2
    else:
        break
sys.stdout.write("".join(w.replace("\0", "") + "\0" for w in info))' "$1"
}

# verdict RC prints the line that says whether the rerun (container status
# RC, report $out/rerun.json) reproduced what the bundle recorded, and
# exits with the script's status.
verdict() {
	python3 - "$bundle" "$out/rerun.json" "$case_id" "$1" <<'EOF'
import json, sys

bundle_path, rerun_path, case_id, rc = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

def first_line(s):
    return (s or "").strip().split("\n")[0]

def what(c):
    r = first_line(c.get("reason"))
    return c.get("verdict", "?") + (": " + r if r else "")

recorded = json.load(open(bundle_path)).get("result") or {}
recorded.setdefault("verdict", "FAIL")
rerun = None
try:
    for c in json.load(open(rerun_path)).get("cases") or []:
        if c.get("id") == case_id:
            rerun = c
            break
except (OSError, ValueError):
    pass

say = lambda line: print("repro-in-image: " + line)
failing = {"FAIL": 1, "HUNG": 3}
if rc in (1, 3):
    got = rerun["verdict"] if rerun and rerun.get("verdict") in failing else {1: "FAIL", 3: "HUNG"}[rc]
    detail = what(rerun) if rerun else "exit %d; %s has no result for it" % (rc, rerun_path)
    if got == recorded["verdict"]:
        say("reproduced: %s %s again as recorded (%s)" % (case_id, "hung" if got == "HUNG" else "failed", detail))
        sys.exit(0)
    say("reproduced differently: %s ended %s in the image where the bundle recorded %s (%s)" % (case_id, got, what(recorded), detail))
    sys.exit(rc)
if rc == 0:
    if rerun and rerun.get("verdict") == "skipped":
        say("not reproduced: %s was skipped in the image: %s (the bundle recorded %s)" % (case_id, first_line(rerun.get("reason")) or "no reason given", what(recorded)))
    else:
        say("not reproduced: %s passed in the image (the bundle recorded %s); races reproduce statistically, rerun it" % (case_id, what(recorded)))
    sys.exit(1)
names = {2: "artest: usage error", 4: "artest: the environment cannot run it", 125: "podman: the container could not be made",
         126: "podman: the command could not be run", 127: "podman: the command was not found", 130: "interrupted", 143: "terminated"}
name = names.get(rc, "")
say("no verdict: the rerun of %s in the image exited %d%s before the case ran to a result; the bundle recorded %s; see the output above" %
    (case_id, rc, " (" + name + ")" if name else "", what(recorded)))
sys.exit(rc)
EOF
}

info=()
mapfile -d '' info < <(bundle_info "$bundle")
[[ ${info[0]:-} == 1 ]] || die "$1 is not an artest repro bundle"
case_id=${info[1]} np=${info[2]} backend=${info[3]} bundle_rev=${info[4]} plugin=${info[5]}
env=("${info[@]:6}")
if [[ -n $plugin ]]; then
	die "$1 reruns a plugin variant ($plugin): the image holds no plugins"
fi
out=${out:-bin/repro-image/$(basename "$bundle" .json)}
mkdir -p "$out"
out=$(realpath "$out")

artest_bin=${artest_bin:-bin/artest}
[[ -x $artest_bin ]] || die "$artest_bin missing (run make build)"
rev=$("$artest_bin" --version | sed -n 's/^artest [^ ]* (\([^,]*\),.*/\1/p')
[[ -n $rev ]] || die "$artest_bin --version names no revision"
image=localhost/artest:$rev
image_conf bin/image
if ! podman image exists "$image"; then
	ci/build-image.sh "$image" >/dev/null
fi
if [[ -n $bundle_rev && $bundle_rev != "$rev" ]]; then
	echo "repro-in-image: note: the bundle was made by artest $bundle_rev, the image holds $rev" >&2
fi

if [[ $backend != host ]]; then
	fatbin=$(podman image inspect --format '{{index .Config.Labels "org.artest.fatbin.sha256"}}' "$image")
	[[ $fatbin != absent ]] || die "$image holds no fatbin for this $backend-backend bundle: make kernels, then rebuild it (ci/build-image.sh)"
fi

# Host backend: more ranks than cores is fine. GPU: one rank per GPU, CDI
# devices and the host's IPC namespace (podman refuses --shm-size beside
# --ipc=host).
flags=("${image_run_flags[@]}") mpirun_flags=(--oversubscribe)
if [[ $backend != host ]]; then
	flags=(--rm --ulimit host --runtime runc --device nvidia.com/gpu=all --ipc=host) mpirun_flags=()
fi
# The recorded environment: into the container, and from mpirun to the
# ranks.
for kv in "${env[@]}"; do
	flags+=(-e "$kv")
	mpirun_flags+=(-x "${kv%%=*}")
done
if ((${#env[@]})); then
	echo "repro-in-image: the bundle's run had ${env[*]}; passed into the container" >&2
fi
cmd=(podman run "${flags[@]}" -v "$bundle:/in/bundle.json:ro" -v "$out:/out" "$image"
	mpirun --allow-run-as-root "${mpirun_flags[@]}" -np "$np" artest --repro /in/bundle.json --repro-dir /out --json /out/rerun.json)
echo "repro-in-image: $case_id ($backend backend, $np ranks) in $image; reports in $out" >&2
printf 'CONTAINERS_CONF=%q' "$CONTAINERS_CONF"
printf ' %q' "${cmd[@]}"
printf '\n'
if ((run)); then
	rm -f "$out/rerun.json" # a report of an earlier rerun must not speak for this one
	rc=0
	"${cmd[@]}" || rc=$?
	verdict "$rc"
fi
