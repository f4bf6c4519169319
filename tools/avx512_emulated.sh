#!/usr/bin/env bash
# Runs the AVX-512 scan kernels and their equivalence tests on an emulated AVX-512 CPU.
#
# Why: the kernels behind `Dispatch::Avx512` (src/scan/*/x86.rs) only run on a CPU with
# AVX512F + BW + VPOPCNTDQ, and the equivalence tests iterate `available_dispatches()`, so on an
# AVX2-only machine they silently test scalar + AVX2 only. QEMU's TCG has no AVX-512; Debian's
# Bochs 2.7 does (Tiger Lake / Ice Lake models). This script
#   1. builds the test binaries that exercise the scan kernels (tests/scan_equivalence.rs, the
#      lib unit tests, filtered to `scan::`) and the `codedb` CLI (its `bench scan` prints the
#      ISA `Dispatch::Auto` picked);
#   2. packs them with busybox-static and their shared libraries into an initramfs, and puts it
#      with a Debian cloud kernel on an El Torito ISO booted by isolinux;
#   3. boots that ISO in Bochs (headless, serial console to a file), where /init prints the CPU
#      flags, requires `Dispatch::Avx512` to be available (CODEDB_EXPECT_DISPATCH=avx512), runs
#      the tests with one thread, and powers off;
#   4. reads the serial log: exit 0 only if AVX-512 was detected and every test binary passed.
#
# Needs: Debian (bookworm) with apt, root or sudo for apt-get install, the Rust toolchain.
# Downloads nothing but Debian packages (bochs, busybox-static, isolinux, xorriso, a kernel).
#
# Usage: tools/avx512_emulated.sh [TEST_FILTER]
#   TEST_FILTER   a libtest name filter for tests/scan_equivalence.rs (default: every test)
# Environment:
#   AVX512EMU_WORK     work directory (default /tmp/avx512emu); large files go there
#   AVX512EMU_CPU      Bochs CPU model (default tigerlake; corei7_icelake_u also has the ISA)
#   AVX512EMU_TIMEOUT  seconds before the emulator is stopped and the run fails (default 10800)
#   AVX512EMU_MEM_MB   guest memory (default 1024)
#   AVX512EMU_IPS      instructions per emulated second, Bochs `ips` (default 100000000); only
#                      the guest clock depends on it
#   CARGO_TARGET_DIR   honoured as usual
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=${AVX512EMU_WORK:-/tmp/avx512emu}
cpu_model=${AVX512EMU_CPU:-tigerlake}
timeout_s=${AVX512EMU_TIMEOUT:-10800}
mem_mb=${AVX512EMU_MEM_MB:-1024}
ips=${AVX512EMU_IPS:-100000000}
filter=${1:-}

log() { printf '[avx512emu] %s\n' "$*" >&2; }
die() { printf '[avx512emu] FAIL: %s\n' "$*" >&2; exit 1; }

mkdir -p "$work"
cd "$work"

# --- 0. host packages -------------------------------------------------------------------------
# bochs: the emulator (its plugins include the rfb display, the only headless one in the base
# package); bochsbios/vgabios: firmware; busybox-static: the guest's /init shell and poweroff;
# isolinux + syslinux-common: the CD boot loader; xorriso: the ISO; cpio: the initramfs.
need_pkgs=()
command -v bochs-bin >/dev/null || need_pkgs+=(bochs)
[[ -f /usr/share/bochs/BIOS-bochs-latest ]] || need_pkgs+=(bochsbios)
[[ -f /usr/share/vgabios/vgabios.bin ]] || need_pkgs+=(vgabios)
# busybox-static installs /bin/busybox; a dynamic busybox would need its libraries too.
if ! { [[ -x /bin/busybox ]] && ! ldd /bin/busybox >/dev/null 2>&1; }; then
    need_pkgs+=(busybox-static)
fi
[[ -f /usr/lib/ISOLINUX/isolinux.bin ]] || need_pkgs+=(isolinux)
[[ -f /usr/lib/syslinux/modules/bios/ldlinux.c32 ]] || need_pkgs+=(syslinux-common)
command -v xorriso >/dev/null || need_pkgs+=(xorriso)
command -v cpio >/dev/null || need_pkgs+=(cpio)
command -v objcopy >/dev/null || need_pkgs+=(binutils)
sudo=()
[[ $(id -u) -eq 0 ]] || sudo=(sudo)
if ((${#need_pkgs[@]})); then
    log "installing ${need_pkgs[*]}"
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
        "${need_pkgs[@]}" >/dev/null
fi
command -v bochs-bin >/dev/null || die "bochs-bin not found after installing bochs"

# --- 1. kernel --------------------------------------------------------------------------------
# The cloud flavour: small, boots fast, has the 8250 console, initramfs and devtmpfs built in.
kpkg=$(apt-cache depends linux-image-cloud-amd64 | awk '/Depends: linux-image-/ {print $2; exit}')
[[ -n $kpkg ]] || die "cannot resolve linux-image-cloud-amd64 to a kernel package"
vmlinuz=$work/kernel/$kpkg/vmlinuz
if [[ ! -f $vmlinuz ]]; then
    log "downloading $kpkg"
    rm -rf "$work/kernel/$kpkg" && mkdir -p "$work/kernel/$kpkg"
    (cd "$work/kernel/$kpkg" && apt-get download -qq "$kpkg" 2>/dev/null && dpkg-deb -x ./*.deb x) ||
        die "apt-get download $kpkg failed"
    cp "$work/kernel/$kpkg"/x/boot/vmlinuz-* "$vmlinuz"
    rm -rf "$work/kernel/$kpkg/x" "$work/kernel/$kpkg"/*.deb
fi

# --- 2. test binaries -------------------------------------------------------------------------
# `executable` of the compiler-artifact messages in $1 whose target matches $2 (fixed string).
executable() {
    grep '"reason":"compiler-artifact"' "$1" | grep -F "$2" | grep -o '"executable":"[^"]*"' |
        cut -d'"' -f4 || true
}
cd "$repo"
log "building (cargo test --release --no-run; cargo build --release --bin codedb)"
cargo test --release --test scan_equivalence --no-run --message-format=json -q >"$work/eq.json" ||
    die "cargo test --test scan_equivalence --no-run failed"
cargo test --release --lib --no-run --message-format=json -q >"$work/lib.json" ||
    die "cargo test --lib --no-run failed"
cargo build --release --bin codedb --message-format=json -q >"$work/cli.json" ||
    die "cargo build --bin codedb failed"
eq_bin=$(executable "$work/eq.json" '"kind":["test"],"crate_types":["bin"],"name":"scan_equivalence"')
lib_bin=$(executable "$work/lib.json" '"kind":["lib"],"crate_types":["lib"],"name":"codedb"')
cli_bin=$(executable "$work/cli.json" '"kind":["bin"],"crate_types":["bin"],"name":"codedb"')
for b in "$eq_bin" "$lib_bin" "$cli_bin"; do
    [[ -n $b && -x $b && $(wc -l <<<"$b") -eq 1 ]] || die "could not find a built binary ($b)"
done
cd "$work"

# --- 3. initramfs -----------------------------------------------------------------------------
root=$work/root
rm -rf "$root" && mkdir -p "$root"/{bin,proc,sys,dev,tmp,t}
cp /bin/busybox "$root/bin/busybox"
# Debug info only makes the initramfs large; symbols stay for panics' backtraces.
objcopy --strip-debug "$eq_bin" "$root/t/scan_equivalence"
objcopy --strip-debug "$lib_bin" "$root/t/lib_tests"
objcopy --strip-debug "$cli_bin" "$root/t/codedb"
for b in "$eq_bin" "$lib_bin" "$cli_bin"; do
    ldd "$b" | grep -o '/[^ ]*' | while read -r lib; do
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
done
cat >"$root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
export PATH=/bin HOME=/tmp TMPDIR=/tmp RUST_BACKTRACE=1 CODEDB_EXPECT_DISPATCH=avx512
FILTER=$(cat /filter)
echo "AVX512EMU: $(grep -m1 '^model name' /proc/cpuinfo)"
echo "AVX512EMU: $(grep -m1 '^flags' /proc/cpuinfo)"
echo "AVX512EMU: uptime $(cut -d' ' -f1 /proc/uptime) s"
# $1 = label, the rest = the command; prints its exit status on a line of its own.
run() {
    label=$1
    shift
    echo "AVX512EMU: BEGIN $label (uptime $(cut -d' ' -f1 /proc/uptime) s)"
    "$@"
    echo "AVX512EMU: END $label rc=$? (uptime $(cut -d' ' -f1 /proc/uptime) s)"
}
# The test binary states which dispatches it will iterate, and fails without AVX-512.
run expect /t/scan_equivalence --exact expected_dispatch_is_available --nocapture --test-threads 1
# What `Dispatch::Auto` picked, through the CLI (a tiny hamming64 scan on a real segment).
run cli /t/codedb bench scan --codes 4096 --kind hamming64,pq8x8,pq4x16 --queries 1 --k 10 \
    --threads 1 --repeats 1 --dir /tmp/cb --json
run lib /t/lib_tests scan:: --test-threads 1
run eq /t/scan_equivalence --test-threads 1 $FILTER
echo "AVX512EMU: DONE"
sleep 1
poweroff -f
EOF
chmod +x "$root/init"
printf '%s\n' "$filter" >"$root/filter"
iso=$work/iso
rm -rf "$iso" && mkdir -p "$iso/isolinux"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1 >"$iso/isolinux/initrd.gz")
cp "$vmlinuz" "$iso/isolinux/vmlinuz"
cp /usr/lib/ISOLINUX/isolinux.bin /usr/lib/syslinux/modules/bios/ldlinux.c32 "$iso/isolinux/"
# Kernel flags, each working around a gap in Bochs 2.7's CPU model (found by booting it):
# - clearcpuid=pku: CPUID leaf 0xD reports no size/offset for the PKRU state, which makes the
#   kernel's XSAVE checks fail and disable XSAVE (and with it AVX and AVX-512);
# - clearcpuid=xsavec,xsaves: CPUID 0xD.1 EBX gives the standard, not the compacted, size, so
#   the compacted-format check fails the same way; the standard format works;
# - clearcpuid=fsrm: Bochs reports fast string operations disabled, the kernel then drops ERMS
#   but keeps FSRM, and this kernel's memmove loops forever with FSRM set and ERMS clear;
# - mitigations=off, nokaslr: less to emulate, stable addresses for the Bochs debugger.
cat >"$iso/isolinux/isolinux.cfg" <<'EOF'
SERIAL 0 115200
DEFAULT linux
PROMPT 0
TIMEOUT 0
LABEL linux
  KERNEL vmlinuz
  APPEND initrd=initrd.gz console=ttyS0,115200 panic=0 rdinit=/init clearcpuid=pku,xsavec,xsaves,fsrm mitigations=off nokaslr
EOF
xorriso -as mkisofs -quiet -o "$work/boot.iso" -b isolinux/isolinux.bin -c isolinux/boot.cat \
    -no-emul-boot -boot-load-size 4 -boot-info-table "$iso" 2>/dev/null

# --- 4. boot ----------------------------------------------------------------------------------
serial=$work/serial.log
rm -f "$serial" "$work/bochs.log"
# Headless: Debian's bochs has no `nogui`; `rfb` with timeout=0 does not wait for a viewer.
# Sound off: the ALSA mixer thread aborts without a sound card.
cat >"$work/bochsrc" <<EOF
memory: guest=$mem_mb, host=$mem_mb
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/vgabios/vgabios.bin
cpu: model=$cpu_model, count=1, ips=$ips, reset_on_triple_fault=0
ata0-master: type=cdrom, path=$work/boot.iso, status=inserted
boot: cdrom
display_library: rfb, options="timeout=0"
com1: enabled=1, mode=file, dev=$serial
plugin_ctrl: speaker=0
sound: driver=dummy
clock: sync=none, time0=1
log: $work/bochs.log
panic: action=fatal
error: action=ignore
info: action=ignore
debug: action=ignore
EOF
# Debian's bochs-bin has the debugger built in: it starts at a prompt; -rc runs `continue`.
printf 'continue\nquit\n' >"$work/bochs.rc"
log "booting $cpu_model in Bochs (serial log: $serial)"
start=$(date +%s)
bochs-bin -q -f "$work/bochsrc" -rc "$work/bochs.rc" </dev/null >"$work/bochs.out" 2>&1 &
bochs_pid=$!
# The guest clock is no use for timing (Bochs' TSC counts instructions, the kernel reads it as
# 2.4 GHz), so the serial lines get host wall-clock stamps: $serial.stamped.
touch "$serial"
exec {stamp_fd}> >(while IFS= read -r line; do
    printf '%s %s\n' "$(date +%T)" "$line"
done >"$serial.stamped")
tail -n +1 -F "$serial" 1>&"$stamp_fd" 2>/dev/null &
stamp_pid=$!
trap 'kill "$bochs_pid" "$stamp_pid" 2>/dev/null || true' EXIT
status=timeout
while kill -0 "$bochs_pid" 2>/dev/null; do
    sleep 5
    if grep -q 'AVX512EMU: DONE' "$serial" 2>/dev/null; then
        status=finished
    elif grep -q 'Kernel panic' "$serial" 2>/dev/null; then
        status=panic
        break
    fi
    if (($(date +%s) - start > timeout_s)); then
        break
    fi
    if [[ $status == finished ]]; then
        # /init powers off; give it a moment, then stop the emulator ourselves.
        for _ in $(seq 12); do kill -0 "$bochs_pid" 2>/dev/null || break; sleep 5; done
        break
    fi
done
kill "$bochs_pid" 2>/dev/null || true
wait "$bochs_pid" 2>/dev/null || true
sleep 1
kill "$stamp_pid" 2>/dev/null || true
exec {stamp_fd}>&-
trap - EXIT
elapsed=$(($(date +%s) - start))
[[ -f $serial ]] || die "no serial output (see $work/bochs.out)"
grep -q 'AVX512EMU: DONE' "$serial" && status=finished

# --- 5. verdict -------------------------------------------------------------------------------
log "emulator ran ${elapsed}s wall clock; serial log: $serial"
grep -a -E '^AVX512EMU:|available dispatches|"isa"|^test result:|FAILED|panicked|SIGILL|Illegal' \
    "$serial" | sed 's/^/  | /' >&2 || true
fail=0
[[ $status == finished ]] || { log "run did not finish ($status)"; fail=1; }
flags=$(grep -a -m1 '^AVX512EMU: flags' "$serial" || true)
for f in avx512f avx512bw avx512_vpopcntdq avx512vbmi; do
    grep -q -w "$f" <<<"$flags" || { log "guest CPU lacks $f"; fail=1; }
done
grep -a -q 'available dispatches: \[.*Avx512' "$serial" || { log "Avx512 not among the dispatches"; fail=1; }
grep -a -q -E '"isa": *"avx512-vpopcntdq"' "$serial" || { log "codedb bench did not pick avx512"; fail=1; }
for label in expect cli lib eq; do
    grep -a -q "^AVX512EMU: END $label rc=0 " "$serial" || { log "step $label failed"; fail=1; }
done
((fail == 0)) || die "see $serial"
log "OK: AVX-512 kernels agree with their scalar twins under $cpu_model"
