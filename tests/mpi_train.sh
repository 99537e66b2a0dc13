#!/usr/bin/env bash
# mantissa train --distributed under `mpirun -np 2` (ctest label mpi; registered only where
# CMake found MPI). One case per call: digest, overflow, zero, compression, checkpoint, killed,
# gpt.
# Every mpirun runs under a timeout: a hang fails the test instead of blocking CI.
set -euo pipefail
case_name="${1:?usage: mpi_train.sh digest|overflow|zero|compression|checkpoint|killed|gpt}"
tool="${MANTISSA_BINARY_DIR:?MANTISSA_BINARY_DIR must name the build directory}/mantissa"
mpirun="${MANTISSA_MPIEXEC:-mpirun}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Open MPI's session directory under this test's own directory: two mpiruns starting at once
# otherwise race to create the same /tmp/ompi.<host>.<uid> ("File exists", orte_init fails).
export TMPDIR="$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
# One thread per rank: two ranks share the machine's cores.
export MANTISSA_NUM_THREADS=1
# In a container, shared-memory single copy (CMA) may be refused: plain copies through vader.
# Ranks that wait give their core away (CI runs other tests beside these on 2 cores).
transport=(--oversubscribe --mca btl self,vader --mca btl_vader_single_copy_mechanism none
  --mca mpi_yield_when_idle 1)
mpi2() { timeout 120 "$mpirun" "${transport[@]}" -np 2 "$tool" train --distributed "$@"; }
one() { "$tool" train "$@"; }
digest() { sed -n 's/.*final:.*digest \([0-9a-f]\{16\}\).*/\1/p' "$1"; }
field() { sed -n "s/.*final: test acc \([0-9.]*\)%.*skipped \([0-9]*\).*/\\$2/p" "$1"; }
same() {  # same LABEL FILE-A FILE-B: both runs printed the same final digest
  local a b
  a="$(digest "$2")"; b="$(digest "$3")"
  [ -n "$a" ] || { cat "$2"; fail "$1: no digest in $2"; }
  [ "$a" = "$b" ] || fail "$1: digests differ: $a vs $b"
  echo "ok: $1 ($a)"
}
small=(--hidden 32,32 --epochs 2)

case "$case_name" in
gpt)
  # The GPT at a fixed global batch of 4 micro-batches: one process, -np 2 and -np 4 end with the
  # same digest (each rank its share of the micro-batches, the sums by one fixed tree).
  python3 -c "import random; random.seed(2); w=['the ','cat ','sat ','on ','a ','mat.\\n']
print(''.join(random.choice(w) for _ in range(3000)), end='')" > "$work/text.txt"
  gpt=(--model gpt --data "text:$work/text.txt" --layers 1 --d-model 16 --heads 2 --context 16
    --batch-size 8 --micro-batches 4 --steps 4 --eval-every 4 --eval-windows 8)
  for mode in fp32 bf16-amp fp16-amp bf16-sr; do
    one "${gpt[@]}" --precision "$mode" > "$work/one.txt"
    for np in 2 4; do
      timeout 120 "$mpirun" "${transport[@]}" -np "$np" "$tool" train --distributed "${gpt[@]}" \
        --precision "$mode" --log "$work/log.jsonl" > "$work/mpi.txt"
      same "gpt $mode: -np $np vs one process" "$work/one.txt" "$work/mpi.txt"
      [ "$(grep -c 'final:' "$work/mpi.txt")" = 1 ] || fail "gpt $mode: only rank 0 prints"
      grep -q "\"ranks\":$np" "$work/log.jsonl" || fail "gpt $mode: ranks in the log"
    done
  done
  # A policy mixing storages (fp32 embeddings, block0 bf16 with stochastic rounding): the fused
  # optimizer's groups and their rounding streams are the same on every rank.
  echo '{"name": "mixed", "layers": {"embeddings": {"compute": "fp32"},
    "block0": {"compute": "bf16", "update": "sr"}}}' > "$work/mixed.json"
  one "${gpt[@]}" --policy "$work/mixed.json" > "$work/one.txt"
  timeout 120 "$mpirun" "${transport[@]}" -np 2 "$tool" train --distributed "${gpt[@]}" \
    --policy "$work/mixed.json" > "$work/mpi.txt"
  same "gpt policy: -np 2 vs one process" "$work/one.txt" "$work/mpi.txt"
  # 3 ranks do not divide 4 micro-batches: refused, naming the rule.
  if timeout 120 "$mpirun" "${transport[@]}" -np 3 "$tool" train --distributed "${gpt[@]}" \
    > "$work/mpi.txt" 2> "$work/err.txt"; then
    fail "gpt: 3 ranks accepted"
  fi
  grep -q "must be a power of two dividing the micro-batches (4" "$work/err.txt" ||
    { cat "$work/err.txt"; fail "gpt: 3 ranks message"; }
  ;;
digest)
  # -np 2 equals one process running the same two shards; several buckets; only rank 0 writes.
  for mode in fp32 bf16-amp fp16-amp; do
    one "${small[@]}" --precision "$mode" --shards 2 --bucket-mib 0.001 > "$work/one.txt"
    mpi2 "${small[@]}" --precision "$mode" --bucket-mib 0.001 --log "$work/log.jsonl" \
      > "$work/mpi.txt"
    same "$mode: -np 2 vs --shards 2" "$work/one.txt" "$work/mpi.txt"
    grep -q "every rank ended with the same digest" "$work/mpi.txt" || fail "$mode: agreement"
    [ "$(grep -c 'final:' "$work/mpi.txt")" = 1 ] || fail "$mode: only rank 0 prints"
    [ "$(grep -c '"event":"final"' "$work/log.jsonl")" = 1 ] || fail "$mode: one final record"
    grep -q "\"digest\":\"$(digest "$work/mpi.txt")\"" "$work/log.jsonl" || fail "$mode: log digest"
    grep -q '"ranks":2' "$work/log.jsonl" || fail "$mode: ranks in the log"
    grep -q "in [0-9]* buckets" "$work/mpi.txt" || fail "$mode: bucket count"
    [ "$(sed -n 's/.* in \([0-9]*\) buckets.*/\1/p' "$work/mpi.txt")" -gt 1 ] ||
      fail "$mode: expected several buckets"
  done
  # The shards are really split: one shard and two give different weights in fp32.
  one "${small[@]}" --precision fp32 > "$work/plain.txt"
  one "${small[@]}" --precision fp32 --shards 2 > "$work/two.txt"
  [ "$(digest "$work/plain.txt")" != "$(digest "$work/two.txt")" ] ||
    echo "note: fp32 digests of 1 and 2 shards coincide"
  ;;
overflow)
  # An Inf on rank 1 only at step 5: both ranks skip it and back off alike (fp16-amp).
  inj=(--precision fp16-amp --inject-inf-rank 1 --inject-inf-step 5)
  one "${small[@]}" "${inj[@]}" --shards 2 > "$work/one.txt"
  mpi2 "${small[@]}" "${inj[@]}" > "$work/mpi.txt"
  one "${small[@]}" --precision fp16-amp --shards 2 > "$work/clean.txt"
  same "overflow on rank 1: -np 2 vs --shards 2" "$work/one.txt" "$work/mpi.txt"
  [ "$(field "$work/mpi.txt" 2)" = 1 ] || fail "expected 1 skipped step: $(cat "$work/mpi.txt")"
  [ "$(field "$work/clean.txt" 2)" = 0 ] || fail "the clean run skipped steps"
  [ "$(digest "$work/one.txt")" != "$(digest "$work/clean.txt")" ] || fail "the skip changed nothing"
  grep -q "every rank ended with the same digest, skipped steps and loss scale" "$work/mpi.txt" ||
    fail "ranks disagree"
  # On rank 0 as well.
  mpi2 "${small[@]}" --precision fp16-amp --inject-inf-rank 0 --inject-inf-step 3 > "$work/r0.txt"
  [ "$(field "$work/r0.txt" 2)" = 1 ] || fail "rank 0 injection: expected 1 skipped step"
  ;;
zero)
  # ZeRO-1 equals unsharded; each rank holds part of the optimizer state.
  for mode in bf16-amp bf16-kahan; do
    for opt in adamw sgd; do
      args=(--hidden 64,64 --epochs 2 --precision "$mode" --optimizer "$opt")
      mpi2 "${args[@]}" > "$work/plain.txt"
      mpi2 "${args[@]}" --zero 1 > "$work/zero.txt"
      same "$mode $opt: --zero 1 vs unsharded" "$work/plain.txt" "$work/zero.txt"
      full="$(sed -n 's/.* on this rank of \([0-9]*\) B.*/\1/p' "$work/zero.txt")"
      read -r a b < <(sed -n 's/.*(per rank: \([0-9]*\) \([0-9]*\)).*/\1 \2/p' "$work/zero.txt")
      [ $((a + b)) = "$full" ] || fail "$mode: per-rank state $a + $b != $full"
      [ "$a" -lt "$full" ] && [ "$b" -lt "$full" ] || fail "$mode: state not sharded ($a, $b)"
      echo "ok: $mode $opt state per rank $a, $b of $full bytes"
    done
  done
  if mpi2 "${small[@]}" --precision bf16-sr --zero 1 > /dev/null 2> "$work/err.txt"; then
    fail "bf16-sr with --zero 1 accepted"
  fi
  grep -q "does not support bf16-sr" "$work/err.txt" || fail "bf16-sr message"
  ;;
compression)
  # fp32 mode (whose gradients compression rounds); 4 buckets; digits, 10 epochs.
  args=(--precision fp32 --hidden 64,64 --epochs 10 --bucket-mib 0.01)
  mpi2 "${args[@]}" --grad-comm fp32 > "$work/fp32.txt"
  acc0="$(field "$work/fp32.txt" 1)"
  bytes0="$(sed -n 's/.* \([0-9]*\) B sent per rank.*/\1/p' "$work/fp32.txt")"
  values="$(sed -n 's/.*: \([0-9]*\) gradient values in \([0-9]*\) buckets.*/\1 \2/p' "$work/fp32.txt")"
  read -r n buckets <<< "$values"
  [ "$bytes0" = $((4 * n)) ] || fail "fp32 bytes $bytes0 != 4 * $n"
  for g in bf16 fp16 int8; do
    mpi2 "${args[@]}" --grad-comm "$g" > "$work/$g.txt"
    one "${args[@]}" --grad-comm "$g" --shards 2 > "$work/$g-one.txt"
    same "--grad-comm $g: -np 2 vs --shards 2" "$work/$g.txt" "$work/$g-one.txt"
    [ "$(digest "$work/$g.txt")" != "$(digest "$work/fp32.txt")" ] || fail "$g: nothing rounded"
    bytes="$(sed -n 's/.* \([0-9]*\) B sent per rank.*/\1/p' "$work/$g.txt")"
    case "$g" in
      int8) want=$((n + 4 * buckets)) ;;
      *) want=$((2 * n)) ;;
    esac
    [ "$bytes" = "$want" ] || fail "$g: $bytes bytes per step, expected $want"
    acc="$(field "$work/$g.txt" 1)"
    awk -v a="$acc" -v b="$acc0" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.3) }' ||
      fail "$g: test accuracy $acc% vs $acc0% uncompressed"
    echo "ok: $g $bytes B/step (fp32 $bytes0), accuracy $acc% vs $acc0%"
  done
  ;;
checkpoint)
  # Save after 2 epochs, resume to 4: the uninterrupted run's digest (ZeRO-1 shards and the
  # bf16 error feedback included). Wrong rank count and a corrupt file: non-zero, a message.
  args=(--hidden 32,32 --precision fp16-amp --zero 1 --grad-comm bf16)
  mpi2 "${args[@]}" --epochs 4 > "$work/full.txt"
  mpi2 "${args[@]}" --epochs 2 --save-checkpoint "$work/ck" > /dev/null
  [ -s "$work/ck/rank-0.ckpt" ] && [ -s "$work/ck/rank-1.ckpt" ] || fail "no checkpoint files"
  mpi2 "${args[@]}" --epochs 4 --resume "$work/ck" > "$work/resumed.txt"
  same "resume after 2 of 4 epochs" "$work/full.txt" "$work/resumed.txt"
  grep -q "epoch   1 " "$work/resumed.txt" && fail "the resumed run trained epoch 1 again"
  # One process, two shards, int8 error feedback.
  local_args=(--hidden 32,32 --precision fp32 --shards 2 --grad-comm int8)
  one "${local_args[@]}" --epochs 3 > "$work/lfull.txt"
  one "${local_args[@]}" --epochs 1 --save-checkpoint "$work/lck" > /dev/null
  one "${local_args[@]}" --epochs 3 --resume "$work/lck" > "$work/lres.txt"
  same "one process resumed" "$work/lfull.txt" "$work/lres.txt"
  # A failed write (the file is /dev/full: the disk is full) and a failed rename (rank-0.ckpt is
  # a non-empty directory): non-zero, a message, and no rank-0.ckpt.tmp left behind.
  mkdir -p "$work/full" "$work/taken/rank-0.ckpt/x"
  ln -s /dev/full "$work/full/rank-0.ckpt.tmp"
  for d in full taken; do
    if one "${local_args[@]}" --epochs 1 --save-checkpoint "$work/$d" > /dev/null 2> "$work/err.txt"; then
      fail "a checkpoint write that cannot succeed ($d) succeeded"
    fi
    grep -q "cannot write checkpoint" "$work/err.txt" || { cat "$work/err.txt"; fail "$d: no message"; }
    [ ! -e "$work/$d/rank-0.ckpt.tmp" ] && [ ! -L "$work/$d/rank-0.ckpt.tmp" ] ||
      fail "$d: a failed checkpoint write left rank-0.ckpt.tmp"
  done
  if timeout 120 "$mpirun" "${transport[@]}" -np 3 "$tool" train --distributed "${args[@]}" \
    --epochs 4 --resume "$work/ck" > /dev/null 2> "$work/err.txt"; then
    fail "3 ranks resumed a 2-rank checkpoint"
  fi
  grep -q "written by 2 ranks, this run has 3" "$work/err.txt" || { cat "$work/err.txt"; fail "rank count message"; }
  cp -r "$work/ck" "$work/bad"
  printf 'X' | dd of="$work/bad/rank-1.ckpt" bs=1 seek=100 conv=notrunc 2> /dev/null
  if mpi2 "${args[@]}" --epochs 4 --resume "$work/bad" > /dev/null 2> "$work/err.txt"; then
    fail "a corrupt checkpoint was accepted"
  fi
  grep -q "rank-1.ckpt is corrupt: checksum mismatch" "$work/err.txt" || { cat "$work/err.txt"; fail "corrupt message"; }
  echo "ok: wrong rank count and corrupt file refused"
  # A torn set: rank 1's file from epoch 2 next to rank 0's from epoch 3 (a rank killed between
  # the writes). Every rank refuses it, naming both files.
  mpi2 "${args[@]}" --epochs 3 --save-checkpoint "$work/ck3" > /dev/null
  cp -r "$work/ck3" "$work/torn"
  cp "$work/ck/rank-1.ckpt" "$work/torn/rank-1.ckpt"
  if mpi2 "${args[@]}" --epochs 4 --resume "$work/torn" > /dev/null 2> "$work/err.txt"; then
    fail "a torn checkpoint set was resumed"
  fi
  grep -q "is torn: .*rank-0.ckpt holds epoch 3 .*rank-1.ckpt epoch 2" "$work/err.txt" ||
    { cat "$work/err.txt"; fail "torn set message"; }
  # A resume with other options (here the learning rate): refused.
  if mpi2 "${args[@]}" --epochs 4 --lr 0.002 --resume "$work/ck" > /dev/null 2> "$work/err.txt"; then
    fail "a checkpoint was resumed with another learning rate"
  fi
  grep -q "was written with other options or data" "$work/err.txt" ||
    { cat "$work/err.txt"; fail "resume options message"; }
  # Ranks started with different options (mpirun's MPMD form): every rank stops at start-up.
  if timeout 120 "$mpirun" "${transport[@]}" -np 1 "$tool" train --distributed --hidden 32,32 \
    --epochs 1 --activation relu : -np 1 "$tool" train --distributed --hidden 32,32 --epochs 1 \
    --activation gelu > /dev/null 2> "$work/err.txt"; then
    fail "ranks with different options trained"
  fi
  grep -q "rank 1 was started with other options or data than rank 0" "$work/err.txt" ||
    { cat "$work/err.txt"; fail "MPMD message"; }
  echo "ok: torn set, other options on resume and MPMD options refused"
  ;;
killed)
  # Rank 1 dies (SIGKILL) at step 3: mpirun ends non-zero well within the bound, with a message.
  start=$(date +%s)
  set +e
  mpi2 --hidden 32,32 --epochs 4 --abort-rank 1 --abort-step 3 > "$work/out.txt" 2> "$work/err.txt"
  rc=$?
  set -e
  took=$(( $(date +%s) - start ))
  [ "$rc" != 0 ] || fail "the job succeeded with a killed rank"
  [ "$rc" != 124 ] || fail "the job hung until the timeout"
  grep -qiE "rank 1 .*(killed|signal 9)|exited on signal" "$work/err.txt" ||
    { cat "$work/err.txt"; fail "no message naming the killed rank"; }
  grep -q "final:" "$work/out.txt" && fail "a final record after a rank died"
  echo "ok: killed rank: exit $rc after ${took} s"
  ;;
*) fail "unknown case $case_name" ;;
esac
