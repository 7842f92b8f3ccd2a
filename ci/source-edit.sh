# Sourced by ci/mutant.sh and ci/experiment.sh: a copy of kernels/ in a
# temporary folder, checked edits of it, and the fatbin built from it. The
# sourcing script sets edit_tool (its name, for messages) first. Every edit
# fails unless the lines it names are exactly the ones it expects, so a
# source that moved is an error, not a fatbin without the edit.
#
#   copy_kernels            $tmp/kernels, removed on exit; sets nvcc
#   delete FILE PAT N       removes the N lines matching PAT
#   replace FILE PAT REP N  sed -E's REP for PAT on the N lines matching it
#   insert FILE before|after PAT N TEXT
#   splice FILE FROM TO N TEXT
#   build_fatbin OUT ARCH   one translation unit, as kernels/kernels.mk makes

# copy_kernels copies kernels/ into a temporary folder and picks the
# compiler: NVCC when it names one that exists, else the toolkit's, else
# the pinned wheels' (ci/install-nvcc.sh).
copy_kernels() {
	nvcc=${NVCC:-}
	if [[ -z $nvcc ]] || ! command -v "$nvcc" >/dev/null; then
		nvcc=$(command -v /usr/local/cuda/bin/nvcc || echo "$repo/.tools/nvcc/nvidia/cu13/bin/nvcc")
	fi
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	cp -r "$repo/kernels" "$tmp/kernels"
}

fail() {
	echo "$edit_tool: $*" >&2
	exit 1
}

# matching FILE PATTERN N: the numbers of the lines of FILE matching
# PATTERN (an extended regular expression), which must be exactly N.
matching() {
	local f=$tmp/kernels/$1 pat=$2 want=$3 lines n
	lines=$(grep -nE "$pat" "$f" | cut -d: -f1 || true)
	n=$(grep -cE "$pat" "$f" || true)
	if [[ $n != "$want" ]]; then
		fail "$1 has $n lines matching /$pat/, want $want: the source moved; update ci/$edit_tool.sh"
	fi
	echo "$lines"
}

# delete FILE PATTERN N: removes the lines of FILE matching PATTERN, which
# must be exactly N.
delete() {
	local f=$tmp/kernels/$1 pat=$2 want=$3
	matching "$1" "$pat" "$want" >/dev/null
	grep -vE "$pat" "$f" >"$f.new" && mv "$f.new" "$f"
	echo "$edit_tool: deleted $want line(s) /$pat/ from kernels/$1" >&2
}

# replace FILE PATTERN REPLACEMENT N: substitutes REPLACEMENT (sed -E: \1
# and & work) for PATTERN on the lines of FILE matching it, which must be
# exactly N, and must all change.
replace() {
	local f=$tmp/kernels/$1 pat=$2 rep=$3 want=$4 changed d=$'\x01'
	matching "$1" "$pat" "$want" >/dev/null
	sed -E "s${d}${pat}${d}${rep}${d}" "$f" >"$f.new"
	changed=$(awk 'NR == FNR { old[FNR] = $0; next } old[FNR] != $0 { c++ } END { print c + 0 }' "$f" "$f.new")
	if [[ $changed != "$want" ]]; then
		rm -f "$f.new"
		fail "replacing /$pat/ in $1 changed $changed line(s), want $want: update ci/$edit_tool.sh"
	fi
	mv "$f.new" "$f"
	echo "$edit_tool: replaced /$pat/ with '$rep' on $want line(s) of kernels/$1" >&2
}

# insert FILE before|after PATTERN N TEXT: puts TEXT (lines, taken as they
# are) before or after each line of FILE matching PATTERN, which must be
# exactly N.
insert() {
	local f=$tmp/kernels/$1 where=$2 pat=$3 want=$4 text=$5 lines
	lines=$(matching "$1" "$pat" "$want")
	LINES_AT=" $(echo $lines) " TEXT=$text WHERE=$where awk '
		BEGIN { at = ENVIRON["LINES_AT"] }
		index(at, " " FNR " ") && ENVIRON["WHERE"] == "before" { print ENVIRON["TEXT"] }
		{ print }
		index(at, " " FNR " ") && ENVIRON["WHERE"] == "after" { print ENVIRON["TEXT"] }' "$f" >"$f.new"
	mv "$f.new" "$f"
	echo "$edit_tool: inserted $(printf '%s\n' "$text" | wc -l) line(s) $where /$pat/ (line(s) $(echo $lines)) of kernels/$1" >&2
}

# splice FILE FROM TO N TEXT: the N lines of FILE from the one line matching
# FROM through the first line matching TO (at or after it) become TEXT
# (lines; empty: none). FROM must match exactly one line, and TO must end
# the span at exactly N lines.
splice() {
	local f=$tmp/kernels/$1 from=$2 to=$3 want=$4 text=$5 first span
	first=$(matching "$1" "$from" 1)
	span=$(tail -n +"$first" "$f" | grep -nE "$to" | head -1 | cut -d: -f1 || true)
	if [[ $span != "$want" ]]; then
		fail "$1: from /$from/ (line $first) to /$to/ is ${span:-no} line(s), want $want: the source moved; update ci/$edit_tool.sh"
	fi
	{
		head -n $((first - 1)) "$f"
		if [[ -n $text ]]; then printf '%s\n' "$text"; fi
		tail -n +$((first + want)) "$f"
	} >"$f.new"
	mv "$f.new" "$f"
	echo "$edit_tool: replaced lines $first to $((first + want - 1)) (/$from/ to /$to/) of kernels/$1" >&2
}

# build_fatbin OUT ARCH: one translation unit of every kernel source of the
# edited copy, as kernels/kernels.mk makes, compiled for ARCH.
build_fatbin() {
	local out=$1 arch=$2 unity=$tmp/unity.cu
	(cd "$tmp/kernels" && find . -name '*.cu' ! -name '*_test.cu' | sort | sed 's|^\./|#include "|; s|$|"|') >"$unity"
	mkdir -p "$(dirname "$out")"
	"$nvcc" -fatbin -O3 -std=c++17 --threads 0 -I"$tmp/kernels" -gencode "arch=compute_${arch#sm_},code=$arch" \
		-o "$out" "$unity"
}
