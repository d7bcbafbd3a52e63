#!/usr/bin/env bash
# deps.sh - install what keysteer's build, demo and tests need from Debian's
# packages, and nothing that is already there.
#
#   user/scripts/deps.sh                 install whatever is missing
#   user/scripts/deps.sh --check-build   exit 0 if everything is present,
#                                        non-zero otherwise; installs nothing
#
# The Makefile runs `deps.sh --check-build || deps.sh`, so a machine that has
# everything pays one quick check and prints nothing.
set -euo pipefail

# Debian package -> a file that proves it is installed. Checking files rather
# than asking dpkg keeps the check fast and also accepts tools installed some
# other way (a developer's own clang, say).
PACKAGES=(
	"clang:/usr/bin/clang"
	# the format check of make test (.clang-format)
	"clang-format:/usr/bin/clang-format"
	"llvm:/usr/bin/llvm-strip"
	"bpftool:/usr/sbin/bpftool"
	"libbpf-dev:/usr/include/bpf/libbpf.h"
	"libelf-dev:/usr/include/gelf.h"
	"zlib1g-dev:/usr/include/zlib.h"
	"make:/usr/bin/make"
	"gcc:/usr/bin/gcc"
	"iproute2:/usr/sbin/ip"
	"memcached:/usr/bin/memcached"
	"python3-pymemcache:/usr/lib/python3/dist-packages/pymemcache/__init__.py"
	"libmemcached-tools:/usr/bin/memcstat"
	"libmemcached-dev:/usr/include/libmemcached/memcached.h"
	# the agent's HTTP server (--listen, --metrics): user/net/http_serve.c
	"libmicrohttpd-dev:/usr/include/microhttpd.h"
	"util-linux:/usr/bin/setpriv"
	"coreutils:/usr/bin/timeout"
	# the tests: pgrep (test_install.sh), curl for etcd's gateway
	# (test_etcd_client.sh), modprobe for the 8021q module
	# (test_steer_v6.sh's VLAN case, where the kernel has it as a module)
	"procps:/usr/bin/pgrep"
	"curl:/usr/bin/curl"
	"kmod:/usr/sbin/modprobe"
	# tests of the dashboards: promtool checks the metrics, tmux drives the
	# live dashboard, tcpdump captures traffic for 'agent replay'
	"prometheus:/usr/bin/promtool"
	"tmux:/usr/bin/tmux"
	"tcpdump:/usr/bin/tcpdump"
	# tests of the installation: the unit file, the man page, the report's
	# JSON schema, the agent's system calls under the unit's filter
	"systemd:/usr/bin/systemd-analyze"
	"groff-base:/usr/bin/groff"
	"python3-jsonschema:/usr/lib/python3/dist-packages/jsonschema/__init__.py"
	"strace:/usr/bin/strace"
	# tests with real clients (tests/e2e/test_clients.sh): pylibmc, text
	# and binary; ethtool turns GRO on for the tc program's pass
	"python3-pylibmc:/usr/lib/python3/dist-packages/pylibmc/__init__.py"
	"ethtool:/usr/sbin/ethtool"
	# make bench-line --trafficgen: Debian's XDP traffic generator
	"xdp-tools:/usr/sbin/xdp-trafficgen"
	# make bench-host HOST_PERF_HZ=...: the observers' kernel time by
	# sampling (tcpdump's copy of each frame runs outside its process)
	"linux-perf:/usr/bin/perf"
	# the fleet in etcd (docs/fleet.md): the client's HTTP and JSON
	# libraries; etcd 3.4 itself for the tests and the demo's fleet part
	# (its daemon is kept from starting, below), openssl for the tests'
	# TLS certificates
	"libcurl4-openssl-dev:/usr/bin/curl-config"
	"libjansson-dev:/usr/include/jansson.h"
	"etcd-server:/usr/bin/etcd"
	"etcd-client:/usr/bin/etcdctl"
	"openssl:/usr/bin/openssl"
	# the compat tier's client oracles (tests/compat/clients_compat.c,
	# ring_compat.c): PHP's memcached extension, Ruby's dalli, Java's
	# spymemcached and a JDK to compile the test's program against it
	"php-cli:/usr/bin/php"
	"php-memcached:/etc/php/8.2/mods-available/memcached.ini"
	"ruby:/usr/bin/ruby"
	"ruby-dalli:/usr/share/rubygems-integration/all/gems/dalli-3.0.6/lib/dalli/ring.rb"
	"libspymemcached-java:/usr/share/java/spymemcached.jar"
	"openjdk-17-jdk-headless:/usr/bin/javac"
	# the ring's oracles (tests/compat): twemproxy itself (its daemon is
	# kept from starting, below), and gomemcache's source with Go to build
	# a program against it, offline
	"nutcracker:/usr/sbin/nutcracker"
	"golang-go:/usr/bin/go"
	"golang-github-bradfitz-gomemcache-dev:/usr/share/gocode/src/github.com/bradfitz/gomemcache/memcache/selector.go"
)

have() { [ -e "$1" ] || command -v "$(basename "$1")" >/dev/null 2>&1; }

# Prints the packages whose proof file is missing, one per line.
missing_packages() {
	local entry pkg file
	for entry in "${PACKAGES[@]}"; do
		pkg=${entry%%:*}
		file=${entry#*:}
		have "$file" || echo "$pkg"
	done
	# The file being there is not enough for pymemcache: the tests run it
	# with Debian's interpreter, so it must import there.
	if [ -x /usr/bin/python3 ] &&
		! /usr/bin/python3 -c 'import pymemcache' >/dev/null 2>&1; then
		echo python3-pymemcache
	fi
	if [ -x /usr/bin/python3 ] &&
		! /usr/bin/python3 -c 'import pylibmc' >/dev/null 2>&1; then
		echo python3-pylibmc
	fi
	[ -x /usr/bin/python3 ] || echo python3
	# the fuzz tier's libFuzzer runtime, packaged apart from clang and
	# named by clang's major version
	if [ -x /usr/bin/clang ] && [ ! -f "$(/usr/bin/clang -print-resource-dir)/lib/linux/libclang_rt.fuzzer-$(uname -m).a" ]; then
		echo "libclang-rt-$(/usr/bin/clang -dumpversion | cut -d. -f1)-dev"
	fi
	# dalli's version is in its path above; any version that loads will do
	if [ -x /usr/bin/ruby ] &&
		! /usr/bin/ruby -e 'require "dalli"' >/dev/null 2>&1; then
		echo ruby-dalli
	fi
	if [ -x /usr/bin/php ] &&
		! /usr/bin/php -r 'exit(class_exists("Memcached") ? 0 : 1);' >/dev/null 2>&1; then
		echo php-memcached
	fi
}

main() {
	local missing
	# One line, space-separated: apt-get takes them as separate words.
	missing=$(missing_packages | sort -u | tr '\n' ' ')
	missing=${missing% }

	if [ "${1:-}" = "--check-build" ]; then
		[ -z "$missing" ]
		return
	fi
	if [ $# -gt 0 ]; then
		echo "deps.sh: unknown argument '$1'; use no argument or --check-build" >&2
		return 2
	fi
	[ -z "$missing" ] && return 0

	if [ "$(id -u)" -ne 0 ]; then
		echo "deps.sh: missing packages: $missing" >&2
		echo "deps.sh: run as root (or: sudo apt-get install $missing)" >&2
		return 1
	fi
	echo "deps.sh: installing: $missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	# prometheus is wanted for promtool only, etcd-server for the tests'
	# own etcd processes: keep their servers (daemons on :9090 and :2379)
	# from being started by the install (Debian's policy-rc.d).
	local policy=/usr/sbin/policy-rc.d made_policy=
	if [[ " $missing " == *" prometheus "* || " $missing " == *" etcd-server "* ||
		" $missing " == *" nutcracker "* ]] &&
		[ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" &&
			made_policy=1
	fi
	# shellcheck disable=SC2086 # one word per package is what we want
	apt-get install -y -q --no-install-recommends $missing || {
		[ -n "$made_policy" ] && rm -f "$policy"
		return 1
	}
	[ -n "$made_policy" ] && rm -f "$policy"
	# ... nor at the next boot: the package enables etcd.service
	if [[ " $missing " == *" etcd-server "* ]] && command -v systemctl >/dev/null; then
		systemctl disable --now etcd.service >/dev/null 2>&1 || true
	fi
	if [[ " $missing " == *" nutcracker "* ]] && command -v systemctl >/dev/null; then
		systemctl disable --now nutcracker.service >/dev/null 2>&1 || true
	fi

	missing=$(missing_packages | sort -u | tr '\n' ' ')
	missing=${missing% }
	if [ -n "$missing" ]; then
		echo "deps.sh: still missing after install: $missing" >&2
		return 1
	fi
}

main "$@"
