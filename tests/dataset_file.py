#!/usr/bin/env python3
"""dataset_file.py — the `file` dataset's test files and checks (h5py + numpy).

usage:
  dataset_file.py make DIR
      good_f32.h5, good_f16.h5 (q, k, v of shape [3][500][32]) and bad files:
      wrong_rank.h5, int32.h5, short.h5, small_d.h5, missing_k.h5, not_hdf5.h5, and more
      (below)
  dataset_file.py read FILE HEADS L OUT -- mpiexec ... test_dataset_file FILE HEADS L D OUT
      runs the command; OUT (float32 [3][HEADS][L][D]) must equal numpy's values of
      q, k, v [:HEADS, :L, :] (float16 converted to float32) exactly
  dataset_file.py run FILE RESULTS -- mpiexec ... ropebench run ... --dump-inputs -o RESULTS
      runs the study; every case of dataset `file` must have /inputs/{q,k,v} equal to the
      file's rows, and finite lse/entropy
  dataset_file.py bad_chunk RESULTS CASE... -- mpiexec ... ropebench run ... -o RESULTS
      the run reads bad_chunk.h5 (one gzip chunk of k damaged): it must exit 1 with one
      error line naming the file, the dataset and the filter's failure, and RESULTS must
      hold exactly the cases CASE... (those finished before it), readable, lse finite
"""
import os
import re
import shutil
import subprocess
import sys
import zlib

import h5py
import numpy as np

H, S, D = 3, 500, 32


def write(path, shapes_types, skip=()):
    rng = np.random.default_rng(zlib.crc32(path.encode()))
    with h5py.File(path, "w") as f:
        for name in "qkv":
            if name in skip:
                continue
            shape, dtype = shapes_types.get(name, ((H, S, D), np.float32))
            if np.issubdtype(dtype, np.integer):
                data = rng.integers(-100, 100, size=shape).astype(dtype)
            else:
                data = rng.standard_normal(shape).astype(dtype)
            f.create_dataset(name, data=data)


def make(d):
    write(f"{d}/good_f32.h5", {})
    write(f"{d}/good_f16.h5", {n: ((H, S, D), np.float16) for n in "qkv"})
    write(f"{d}/wrong_rank.h5", {"k": ((S, D), np.float32)})
    write(f"{d}/int32.h5", {"k": ((H, S, D), np.int32)})
    write(f"{d}/short.h5", {"k": ((H, 100, D), np.float32)})
    write(f"{d}/small_d.h5", {"k": ((H, S, 16), np.float32)})
    write(f"{d}/missing_k.h5", {}, skip=("k",))
    with open(f"{d}/not_hdf5.h5", "w") as f:
        f.write("this is text, not HDF5\n")
    # a NaN at k[1][7][3]; k compressed with a filter HDF5's C library lacks (lzf); k as
    # a virtual dataset; k stored in an external file that is not there
    write(f"{d}/nan_k.h5", {})
    with h5py.File(f"{d}/nan_k.h5", "a") as f:
        f["k"][1, 7, 3] = np.nan
    # a finite value whose scores would overflow float32 (1e37; until 2026-11-30 the run
    # exited 0 with lse = -inf in every row)
    write(f"{d}/huge_q.h5", {})
    with h5py.File(f"{d}/huge_q.h5", "a") as f:
        f["q"][0, 5, 2] = np.float32(-1e37)
    write(f"{d}/lzf.h5", {}, skip=("k",))
    with h5py.File(f"{d}/lzf.h5", "a") as f:
        f.create_dataset("k", data=np.ones((H, S, D), np.float32), compression="lzf")
    write(f"{d}/vds.h5", {}, skip=("k",))
    with h5py.File(f"{d}/vds.h5", "a") as f:
        lay = h5py.VirtualLayout(shape=(H, S, D), dtype=np.float32)
        lay[...] = h5py.VirtualSource(f"{d}/good_f32.h5", "k", shape=(H, S, D))
        f.create_virtual_dataset("k", lay)
    write(f"{d}/ext_missing.h5", {}, skip=("k",))
    with h5py.File(f"{d}/ext_missing.h5", "a") as f:
        f.create_dataset("k", shape=(H, S, D), dtype=np.float32,
                         external=[(f"{d}/no-such-raw-file.bin", 0, H * S * D * 4)])
    # k a dangling soft link, and an external link into a file that is not there; k a
    # group
    write(f"{d}/soft_k.h5", {}, skip=("k",))
    with h5py.File(f"{d}/soft_k.h5", "a") as f:
        f["k"] = h5py.SoftLink("/no/such/k")
    write(f"{d}/elink_k.h5", {}, skip=("k",))
    with h5py.File(f"{d}/elink_k.h5", "a") as f:
        f["k"] = h5py.ExternalLink(f"{d}/no-such-file.h5", "/k")
    write(f"{d}/group_k.h5", {}, skip=("k",))
    with h5py.File(f"{d}/group_k.h5", "a") as f:
        f.create_group("k")
    # a name with ':' (ROMIO reads 'cap_10' as a file-system type): a copy of good_f32
    shutil.copyfile(f"{d}/good_f32.h5", f"{d}/cap_10:00.h5")
    # 'nfs:cap.h5' beside a different 'cap.h5': ROMIO opened the latter for the former,
    # nfs being a file-system type it knows
    shutil.copyfile(f"{d}/good_f32.h5", f"{d}/nfs:cap.h5")
    write(f"{d}/cap.h5", {})
    # k float64 at the end of a ~1,900-character path (the message kept its first 511
    # bytes, then 1023, losing the dataset and the reason)
    deep = d + "/" + "/".join(["directory_" + "x" * 50] * 30)
    os.makedirs(deep, exist_ok=True)
    write(f"{deep}/f64_k.h5", {"k": ((H, S, D), np.float64)})
    # k in an external raw file named relative to the HDF5 file's directory (found with
    # HDF5_EXTFILE_PREFIX=${ORIGIN}, as HDF5 finds it; not with another prefix)
    os.makedirs(f"{d}/ext_origin", exist_ok=True)
    raw = np.random.default_rng(5).standard_normal((H, S, D)).astype(np.float32)
    raw.tofile(f"{d}/ext_origin/raw.bin")
    write(f"{d}/ext_origin/extraw.h5", {}, skip=("k",))
    with h5py.File(f"{d}/ext_origin/extraw.h5", "a") as f:
        f.create_dataset("k", shape=raw.shape, dtype=np.float32,
                         external=[("raw.bin", 0, raw.nbytes)])
    # a file cut short: HDF5's own reason in the message
    shutil.copyfile(f"{d}/good_f32.h5", f"{d}/truncated.h5")
    os.truncate(f"{d}/truncated.h5", os.path.getsize(f"{d}/truncated.h5") - 20000)
    # NaN in every row of q from position 100 on: each rank count and layout names the
    # first, [0][100][0]; a value just above 1e15 is named with the digits that say so
    write(f"{d}/nan_rows.h5", {})
    with h5py.File(f"{d}/nan_rows.h5", "a") as f:
        f["q"][:, 100:, :] = np.nan
    # q and k at 1e14, inside the 1e15 bound, whose scores overflow float32 only once
    # an attention_factor of 1e6 multiplies both (the run exited 0 with every lse -inf)
    write(f"{d}/big_qk.h5", {})
    with h5py.File(f"{d}/big_qk.h5", "a") as f:
        for n in "qk":
            f[n][...] = f[n][()] * np.float32(1e14)
    write(f"{d}/above_1e15.h5", {})
    with h5py.File(f"{d}/above_1e15.h5", "a") as f:
        f["v"][1, 3, 4] = np.float32(1.0000001e15)
    # k chunked with only its first 40 positions ever written (a valid file: h5py reads
    # the rest as the fill value, 0); collective reads of a partly allocated dataset
    # failed in HDF5 1.10 ("MPI_File_set_view failed"), so it is read independently;
    # the same with gzip, and with one head's chunks never written
    for name, opts in (("partial", {}), ("partial_gzip", {"compression": "gzip"})):
        write(f"{d}/{name}.h5", {}, skip=("k",))
        with h5py.File(f"{d}/{name}.h5", "a") as f:
            k = f.create_dataset("k", shape=(H, S, D), dtype=np.float32, chunks=(1, 8, D),
                                 **opts)
            k[:, :40, :] = np.random.default_rng(9).standard_normal((H, 40, D))
    write(f"{d}/partial_head.h5", {}, skip=("k",))
    with h5py.File(f"{d}/partial_head.h5", "a") as f:
        k = f.create_dataset("k", shape=(H, S, D), dtype=np.float32, chunks=(1, S, D))
        k[0] = np.random.default_rng(10).standard_normal((S, D))
    # files read whole as the docs say they may be (docs/import.md): float16 chunked as
    # the import example's (1, seq-chunk, head_dim), float32 with gzip, float32
    # big-endian, and v created but never written (every row its fill value, 0; no
    # storage at all, read independently)
    write(f"{d}/chunk_f16.h5", {}, skip=("q", "k", "v"))
    rng = np.random.default_rng(11)
    with h5py.File(f"{d}/chunk_f16.h5", "a") as f:
        for n in "qkv":
            data = rng.standard_normal((H, S, D)).astype(np.float16)
            if n == "v":  # float16's edges, which float32 holds exactly: the smallest
                # subnormals, the largest subnormal, the smallest normal, -0, +-max
                data[0, 0, :8] = np.array([2.0**-24, -2.0**-24, 3 * 2.0**-24,
                                           1023 * 2.0**-24, 2.0**-14, -0.0, 65504.0,
                                           -65504.0], dtype=np.float16)
                data[1, 5, 3] = np.float16(-0.0)
            f.create_dataset(n, data=data, chunks=(1, 64, D))
    with h5py.File(f"{d}/gzip_f32.h5", "w") as f:
        for n in "qkv":
            f.create_dataset(n, data=rng.standard_normal((H, S, D)).astype(np.float32),
                             chunks=(1, 100, D), compression="gzip")
    with h5py.File(f"{d}/be_f32.h5", "w") as f:
        for n in "qkv":
            f.create_dataset(n, data=rng.standard_normal((H, S, D)).astype(">f4"))
    write(f"{d}/unwritten_v.h5", {}, skip=("v",))
    with h5py.File(f"{d}/unwritten_v.h5", "a") as f:
        f.create_dataset("v", shape=(H, S, D), dtype=np.float32, chunks=(1, 64, D))
    # a 4-byte float with float64's 11 exponent bits (20 mantissa bits): HDF5 would turn
    # its large finite values into inf and its tiny ones into 0; refused as a type
    write(f"{d}/wide_exp.h5", {}, skip=("k",))
    with h5py.File(f"{d}/wide_exp.h5", "a") as f:
        t = h5py.h5t.IEEE_F32LE.copy()
        t.set_fields(31, 20, 11, 0, 20)
        t.set_ebias(1023)
        sp = h5py.h5s.create_simple((H, S, D))
        h5py.h5d.create(f.id, b"k", t, sp)
    # float32's fields with exponent bias 100 instead of 127: converting would scale
    # every value by 2^27 (large ones to inf); refused, named by its fields
    write(f"{d}/odd_bias.h5", {}, skip=("k",))
    with h5py.File(f"{d}/odd_bias.h5", "a") as f:
        t = h5py.h5t.IEEE_F32LE.copy()
        t.set_ebias(100)
        sp = h5py.h5s.create_simple((H, S, D))
        h5py.h5d.create(f.id, b"k", t, sp)
    # k compressed (gzip, chunks of 50 positions) with one chunk damaged: head 0,
    # positions 450-499, which only cases longer than 450 tokens read, on whichever rank
    # holds them (a filter failing on one rank inside a collective read)
    write(f"{d}/bad_chunk.h5", {}, skip=("k",))
    with h5py.File(f"{d}/bad_chunk.h5", "a") as f:
        f.create_dataset("k", data=np.random.default_rng(12).standard_normal((H, S, D))
                         .astype(np.float32), chunks=(1, 50, D), compression="gzip")
    with h5py.File(f"{d}/bad_chunk.h5", "r") as f:
        info = f["k"].id.get_chunk_info_by_coord((0, 450, 0))
    with open(f"{d}/bad_chunk.h5", "r+b") as fh:  # the deflate stream past its header
        fh.seek(info.byte_offset + 8)
        raw = bytearray(fh.read(info.size - 12))
        fh.seek(info.byte_offset + 8)
        fh.write(bytes(x ^ 0x5A for x in raw))
    with h5py.File(f"{d}/bad_chunk.h5", "r") as f:
        f["k"][0, 400:450]  # the chunk before it reads
        try:
            f["k"][0, 450:]
            print("FAIL: bad_chunk.h5: the damaged chunk still reads")
            return 1
        except OSError:
            pass
    # k with a null dataspace (h5py.Empty): named as empty, not as a scalar
    write(f"{d}/null_k.h5", {}, skip=("k",))
    with h5py.File(f"{d}/null_k.h5", "a") as f:
        f["k"] = h5py.Empty("f4")
    print("1 passed, 0 failed")
    return 0


def run_cmd(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    sys.stdout.write(p.stdout)
    sys.stdout.write(p.stderr)
    if p.returncode != 0:
        print(f"FAIL: {' '.join(cmd)} exited {p.returncode}")
        return False
    return True


def read(argv):
    sep = argv.index("--")
    path, heads, L, out = argv[0], int(argv[1]), int(argv[2]), argv[3]
    if not run_cmd(argv[sep + 1:]):
        print("0 passed, 1 failed")
        return 1
    with h5py.File(path, "r") as f:
        want = np.stack([np.asarray(f[n][:heads, :L, :], dtype=np.float32) for n in "qkv"])
    got = np.fromfile(out, dtype=np.float32).reshape(want.shape)
    bad = np.argwhere(got != want)
    if len(bad):
        t, h, p, i = bad[0]
        print(f"FAIL: {len(bad)} values differ; first: tensor {'qkv'[t]} head {h} position "
              f"{p} dim {i}: read {got[t, h, p, i]!r}, numpy {want[t, h, p, i]!r}")
        print("0 passed, 1 failed")
        return 1
    print(f"ok: {path}: {want.size} values equal numpy's (dtype "
          f"{h5py.File(path, 'r')['q'].dtype})")
    print("1 passed, 0 failed")
    return 0


def run(argv):
    sep = argv.index("--")
    path, results = argv[0], argv[1]
    if not run_cmd(argv[sep + 1:]):
        print("0 passed, 1 failed")
        return 1
    passed = failed = n_file = 0
    with h5py.File(path, "r") as src, h5py.File(results, "r") as res:
        for name, g in res["cases"].items():
            if g.attrs["dataset"] in ("spectral", b"spectral"):
                # the default [spectral] keys: profile low, a_j ~ exp(2 j / np) with
                # sum a_j^2 = np, coherence 1 (docs/config.md)
                np_ = int(g.attrs["rotary_dim"]) // 2
                a = np.exp(2.0 * np.arange(np_) / np_)
                a *= np.sqrt(np_ / np.sum(a * a))
                sg = g.get("spectral")
                ok = (sg is not None and sg.attrs.get("profile") in ("low", b"low")
                      and float(sg.attrs.get("coherence", -1)) == 1.0
                      and np.allclose(sg["amplitudes"][...], a, rtol=1e-12, atol=0))
                if ok:
                    passed += 1
                else:
                    print(f"FAIL: {name}: spectral parameters missing or wrong")
                    failed += 1
                continue
            if g.attrs["dataset"] not in ("file", b"file"):
                continue
            n_file += 1
            got_path = g.attrs.get("dataset_file")
            if isinstance(got_path, bytes):
                got_path = got_path.decode()
            if got_path != path:
                print(f"FAIL: {name}: dataset_file = {got_path!r}, expected {path!r}")
                failed += 1
            heads, L = int(g.attrs["heads"]), int(g.attrs["seq_len"])
            for t in "qkv":
                want = np.asarray(src[t][:heads, :L, :], dtype=np.float32)
                got = g[f"inputs/{t}"][...]
                # bit for bit (-0.0 is not 0.0 here)
                if got.shape != want.shape or got.tobytes() != want.tobytes():
                    print(f"FAIL: {name}: inputs/{t} differs from {path}")
                    failed += 1
                else:
                    passed += 1
            if not np.all(np.isfinite(g["rows/lse"][...])):
                print(f"FAIL: {name}: non-finite lse")
                failed += 1
    if n_file == 0:  # (spectral cases beside them pass too: they do not count)
        print("FAIL: no case of dataset file in", results)
        failed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def bad_chunk(argv):
    sep = argv.index("--")
    results, want_cases, cmd = argv[0], sorted(argv[1:sep]), argv[sep + 1:]
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=240)
    problems = []
    if p.returncode != 1:
        problems.append(f"exit status {p.returncode}, expected 1")
    for bad in ("Sanitizer", "runtime error", "Segmentation", "Aborted", "HDF5-DIAG",
                "Traceback"):
        if bad in p.stderr or bad in p.stdout:
            problems.append(f"output contains '{bad}'")
    lines = [l for l in p.stderr.splitlines()
             if l.startswith("ropebench:") and " note: " not in l]
    want = [r"bad_chunk\.h5: reading dataset k \(head 0\) failed: .*inflate",
            rf"the {len(want_cases)} finished case\(s\) stay readable in "]
    if len(lines) != 2 or not all(re.search(w, l) for w, l in zip(want, lines)):
        problems.append(f"stderr lines {lines!r}, expected two matching {want!r}")
    try:
        with h5py.File(results, "r") as f:
            got = sorted(f["cases"])
            if got != want_cases:
                problems.append(f"cases {got}, expected {want_cases}")
            for c in got:
                if not np.all(np.isfinite(f["cases"][c]["rows/lse"][...])):
                    problems.append(f"{c}: non-finite lse")
    except OSError as e:
        problems.append(f"{results} does not read: {e}")
    if problems:
        print("FAIL:", " ".join(cmd))
        for x in problems:
            print("  -", x)
        print("--- stderr ---\n" + p.stderr)
        print("0 passed, 1 failed")
        return 1
    print("ok:", lines[0])
    print("1 passed, 0 failed")
    return 0


def main():
    cmd, argv = sys.argv[1], sys.argv[2:]
    if cmd == "make":
        return make(argv[0])
    if cmd == "read":
        return read(argv)
    if cmd == "run":
        return run(argv)
    if cmd == "bad_chunk":
        return bad_chunk(argv)
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
