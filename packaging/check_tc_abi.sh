#!/usr/bin/env bash
# Refuses to build or package q_flexplane.so for an iproute2 whose tc plugin
# ABI differs from the one the plugin is compiled against.
#
#   packaging/check_tc_abi.sh [--tc PATH] [--plugin q_flexplane.so] [--header tc_util.h]
#
# Debian ships no iproute2 development headers, so kmod/tc/q_flexplane.c
# declares the part of tc's plugin ABI it uses itself: struct qdisc_util
# (tc dlopen()s q_<kind>.so and reads "<kind>_qdisc_util", all function
# pointers: tc calls through every member it knows, so a tc with members the
# plugin lacks reads past its struct), the helpers tc exports from its
# executable (addattr_l, print_color_uint...), and enum values (PRINT_*,
# COLOR_NONE). What is checked:
#  1. the plugin source declares struct qdisc_util with exactly the members
#     this script knows (next id parse_qopt print_qopt print_xstats parse_copt
#     print_copt has_block): the two are updated together;
#  2. the installed tc's iproute2 version is in the supported range
#     (SUPPORTED_MIN..SUPPORTED_MAX below: tested 6.1.0, Debian 12, and
#     6.15.0, bookworm-backports; upstream's tc/tc_util.h has had this layout
#     since has_block was appended in 4.x, later changes being const only);
#  3. --header: an iproute2 tree's tc/tc_util.h declares the same members;
#  4. --plugin: every symbol the built plugin takes from tc is exported by it
#     (nm -D).
# The tc checked: --tc, else $TC, else `command -v tc`, else /sbin/tc.
# Exit status 0 when supported; 1 with a message naming what differs.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SUPPORTED_MIN=6.1.0
SUPPORTED_MAX=6.15          # every 6.15.x
EXPECTED="next id parse_qopt print_qopt print_xstats parse_copt print_copt has_block"
SOURCE=$ROOT/kmod/tc/q_flexplane.c
TC_BIN=${TC:-} PLUGIN="" HEADER=""

refuse() {
  echo "check_tc_abi: REFUSED: $*" >&2
  echo "check_tc_abi: q_flexplane.so supports iproute2 $SUPPORTED_MIN to $SUPPORTED_MAX.x" \
       "(struct qdisc_util: $EXPECTED). To support another version, compare its tc/tc_util.h" \
       "(struct qdisc_util), include/json_print.h and include/color.h with the declarations at the" \
       "top of kmod/tc/q_flexplane.c, then widen SUPPORTED_* in packaging/check_tc_abi.sh" \
       "(--header path/to/iproute2/tc/tc_util.h compares the struct for you)." >&2
  exit 1
}

while (($#)); do
  case $1 in
    --tc) TC_BIN=${2:?--tc needs a path}; shift 2 ;;
    --plugin) PLUGIN=${2:?--plugin needs a path}; shift 2 ;;
    --header) HEADER=${2:?--header needs a path}; shift 2 ;;
    --source) SOURCE=${2:?--source needs a path}; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "check_tc_abi: unknown argument '$1' (--tc, --plugin, --header, --source)" >&2; exit 2 ;;
  esac
done

# struct qdisc_util's member names, in order, from a C file
members() {
  perl -0777 -ne 's{/\*.*?\*/}{}gs; s{//[^\n]*}{}g;
    if (/struct\s+qdisc_util\s*\{(.*?)\}\s*;/s) { my @m;
      for (split /;/, $1) { next unless /\S/;
        if (/\(\s*\*\s*(\w+)\s*\)/) { push @m, $1 } elsif (/(\w+)\s*$/) { push @m, $1 } }
      print join(" ", @m), "\n" }' "$1"
}

# 1. the plugin's own declaration
[[ -f $SOURCE ]] || refuse "plugin source $SOURCE not found"
declared=$(members "$SOURCE")
[[ $declared == "$EXPECTED" ]] ||
  refuse "$SOURCE declares struct qdisc_util as ($declared), not ($EXPECTED): update this script with it"

# 2. the installed tc
if [[ -z $TC_BIN ]]; then TC_BIN=$(command -v tc || echo /sbin/tc); fi
[[ -x $TC_BIN ]] || refuse "no tc at '$TC_BIN' (apt-get install iproute2)"
vline=$("$TC_BIN" -V 2>&1 | head -1) || true
version=$(sed -n 's/.*iproute2-\([0-9][0-9.]*[0-9]\).*/\1/p' <<<"$vline")
[[ -n $version ]] || refuse "cannot read iproute2's version from '$TC_BIN -V' (printed: '$vline')"
[[ $version == *.*.* ]] || version=$version.0
lowest=$(printf '%s\n%s\n' "$version" "$SUPPORTED_MIN" | sort -V | head -1)
major_minor=$(cut -d. -f1,2 <<<"$version")
highest=$(printf '%s\n%s\n' "$major_minor" "$SUPPORTED_MAX" | sort -V | tail -1)
if [[ $lowest != "$SUPPORTED_MIN" || $highest != "$SUPPORTED_MAX" ]]; then
  refuse "$TC_BIN is iproute2 $version, outside the supported plugin ABI range"
fi

# 3. an iproute2 source tree's header
if [[ -n $HEADER ]]; then
  [[ -f $HEADER ]] || refuse "header $HEADER not found"
  theirs=$(members "$HEADER")
  [[ $theirs == "$EXPECTED" ]] ||
    refuse "$HEADER declares struct qdisc_util as (${theirs:-nothing found}), the plugin as ($EXPECTED)"
fi

# 4. the helpers the plugin takes from tc
nhelpers=0
if [[ -n $PLUGIN ]]; then
  [[ -f $PLUGIN ]] || refuse "plugin $PLUGIN not found"
  # undefined, unversioned symbols: tc's (libc's carry @GLIBC_*)
  needed=$(nm -D --undefined-only "$PLUGIN" | awk '$1 == "U" && $2 !~ /@/ {print $2}' | sort)
  exported=$(nm -D --defined-only "$TC_BIN" 2>/dev/null | awk '{print $3}' | sed 's/@.*//' | sort -u || true)
  [[ -n $exported ]] || refuse "$TC_BIN exports no dynamic symbols (nm -D): not iproute2's tc executable?"
  missing=$(comm -23 <(echo "$needed") <(echo "$exported") | tr '\n' ' ')
  [[ -z ${missing// } ]] || refuse "$TC_BIN (iproute2 $version) does not export ${missing}needed by $PLUGIN"
  nhelpers=$(wc -w <<<"$needed")
fi

echo "check_tc_abi: $TC_BIN is iproute2 $version: plugin ABI supported" \
     "($SUPPORTED_MIN to $SUPPORTED_MAX.x${HEADER:+; $HEADER matches}${PLUGIN:+; $nhelpers helpers exported})"
