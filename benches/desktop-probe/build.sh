#!/bin/bash
# Cold builds, one at a time, each into its own fresh target directory.
#   ./build.sh   (after the gate; logs in logs/)
set -u
D=$(cd "$(dirname "$0")" && pwd)   # logs/ and target-*/ go here
mkdir -p $D/logs
build() {  # name dir profile(release|debug)
  local name=$1 dir=$2 prof=$3 tgt log args
  if [ "$prof" = release ]; then tgt=$D/target-$name; args="--release"; else tgt=$D/target-$name-debug; args=""; fi
  log=$D/logs/$name-$prof
  rm -rf "$tgt"; mkdir -p "$tgt"
  echo "== $name $prof: $(date -u +%T) loadavg before: $(cat /proc/loadavg)" | tee $log.meta
  ( while sleep 30; do echo "$(date -u +%T) $(cat /proc/loadavg)"; done ) > $log.load & local sampler=$!
  (cd $D/$dir && CARGO_TARGET_DIR=$tgt /usr/bin/time -v cargo build $args --locked -j 2 --timings) > $log.out 2> $log.err
  echo "rc=$?" >> $log.meta
  kill $sampler
  echo "   $(date -u +%T) loadavg after: $(cat /proc/loadavg)" | tee -a $log.meta
  echo "   Compiling lines: $(grep -c '^ *Compiling ' $log.err)" | tee -a $log.meta
  grep -E 'Elapsed \(wall|User time|System time|Maximum resident' $log.err | tee -a $log.meta
  local bin=$tgt/$prof/$dir; ls -l $bin | tee -a $log.meta
  [ "$prof" = release ] && cp $bin $D/logs/$dir-$prof.bin
  cp $tgt/cargo-timings/cargo-timing.html $D/logs/$name-$prof-timing.html 2>/dev/null
}
build wry wry-probe release
build tauri tauri-probe release
build wry wry-probe debug
build tauri tauri-probe debug
