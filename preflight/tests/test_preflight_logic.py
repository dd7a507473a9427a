"""The preflight's comparisons, launcher audit and probe on this machine, without a GPU or torch."""
import csv
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gpucts_preflight import compare, launcher, probe  # noqa: E402


def fp(rank, host="vm", hostid=None, nccl="2.28.9", lib="/venv/nvidia/nccl/lib/libnccl.so.2", env=None,
       gpus=("GPU-a",), local_rank=0, node_rank=None, world=2, ifaces=("lo", "eth0"), boot="b1"):
    e = dict(env or {})
    f = {"host": host, "boot_id": boot, "rank": rank, "nccl": {"runtime": nccl, "library": lib},
         "torch": {"version": "2.11.0+cu130", "cuda": "13.0", "nccl": "2.28.9"}, "driver": {"cuda": "13.0"},
         "gpus": [{"index": i, "uuid": u} for i, u in enumerate(gpus)],
         "interfaces": [{"name": n, "up": True, "addresses": []} for n in ifaces], "env": e}
    info = {"rank": rank, "local_rank": local_rank, "world_size": world, "env": probe.compared_env(e),
            "env_hash": probe.env_hash(e), "pid": 100 + rank,
            "launcher": {"rank": rank, "local_rank": local_rank, "node_rank": node_rank, "contradictions": []}}
    if local_rank < len(gpus):
        info["gpu_uuid"] = gpus[local_rank]
    if hostid is not None:
        raw = hostid if isinstance(hostid, bytes) else hostid.encode()
        raw = raw[:probe.HOSTID_BYTES]
        info["nccl_hostid"], info["nccl_hostid_hex"] = probe.printable(raw), raw.hex()
    f["gpucts_rank"] = info
    return f


def ids(problems):
    return sorted(set(p.id for p in problems))


class Compare(unittest.TestCase):
    def test_same_stack_on_simulated_hosts_passes(self):
        fps = [fp(0, hostid="sim0"), fp(1, hostid="sim1")]
        self.assertEqual(ids(compare.compare(fps, 2)), [])
        self.assertEqual(compare.simulated_hosts(fps), (2, 1))

    def test_another_nccl_on_one_rank_names_rank_and_simulated_host(self):
        fps = [fp(0, hostid="sim0"), fp(1, hostid="sim1", nccl="2.28.3", lib="/usr/lib/libnccl.so.2.28.3")]
        probs = compare.compare(fps, 2)
        self.assertIn("cross-host-mismatch", ids(probs))
        self.assertIn("nccl-library-differs", ids(probs))
        line = [p for p in probs if p.id == "cross-host-mismatch"][0].line()
        self.assertIn("2.28.3 on rank 1 (sim1)", line)
        self.assertIn("2.28.9 on rank 0 (sim0)", line)
        self.assertNotIn("(vm)", line)

    def test_two_ranks_on_one_gpu_without_host_ids(self):
        probs = compare.compare([fp(0), fp(1)], 2)
        self.assertIn("gpu-shared-by-ranks", ids(probs))
        p = [p for p in probs if p.id == "gpu-shared-by-ranks"][0]
        self.assertEqual(p.ranks, [0, 1])
        self.assertIn("distinct NCCL_HOSTID", p.fix)

    def test_host_identity_is_ncclS_raw_bytes(self):
        a, b = b"s" * 1023 + b"x", b"s" * 1023 + b"y"  # differ only past byte 1023: one host to NCCL
        self.assertIn("gpu-shared-by-ranks", ids(compare.compare([fp(0, hostid=a), fp(1, hostid=b)], 2)))
        # sim\xff and sim\xfe are two hosts, though both are invalid UTF-8.
        two = [fp(0, hostid=b"sim\xff"), fp(1, hostid=b"sim\xfe")]
        self.assertNotIn("gpu-shared-by-ranks", ids(compare.compare(two, 2)))
        self.assertEqual(compare.host_name(two[0]), "sim\\xff")

    def test_socket_ifname_matching_nothing(self):
        probs = compare.compare([fp(0, hostid="s0"), fp(1, hostid="s1", env={"NCCL_SOCKET_IFNAME": "eth9"})], 2)
        self.assertEqual(ids(probs), ["nccl-socket-ifname-no-match"])
        self.assertEqual(probs[0].ranks, [1])
        self.assertEqual(probs[0].hosts, ["s1"])

    def test_ifname_syntax(self):
        self.assertTrue(compare.ifname_matches("eth", ["eth0"]))
        self.assertFalse(compare.ifname_matches("=eth", ["eth0"]))
        self.assertTrue(compare.ifname_matches("^docker,lo", ["lo", "ib0"]))
        self.assertFalse(compare.ifname_matches("^lo", ["lo"]))

    def test_settings_differ(self):
        probs = compare.compare([fp(0, hostid="s0", env={"NCCL_PROTO": "Simple"}), fp(1, hostid="s1")], 2)
        self.assertEqual(ids(probs), ["env-differs"])
        self.assertIn("NCCL_PROTO=Simple on rank 0 (s0)", probs[0].cause)
        self.assertIn("NCCL_PROTO unset on rank 1 (s1)", probs[0].cause)

    def test_node_rank_used_twice(self):
        fps = [fp(0, hostid="s0", node_rank=1), fp(1, hostid="s1", node_rank=1)]
        self.assertIn("node-rank-reused", ids(compare.compare(fps, 2)))

    def test_rank_claimed_twice_and_missing_rank(self):
        a, b = fp(1, hostid="s0"), fp(1, hostid="s1")
        probs = compare.compare([a], 2, missing=[(0, "host unknown")], claimed_twice={1: [a, b]})
        self.assertIn("rank-claimed-twice", ids(probs))
        self.assertIn("rank-not-joined", ids(probs))
        self.assertIn("rank 0 (host unknown) did not join", [p for p in probs if p.id == "rank-not-joined"][0].cause)

    def test_world_size_unlike_the_ranks(self):
        self.assertIn("world-size-differs", ids(compare.compare([fp(0, hostid="a"), fp(1, hostid="b", world=3)], 2)))

    def test_local_rank_beyond_gpus(self):
        probs = compare.compare([fp(0, hostid="a"), fp(1, hostid="b", local_rank=3)], 2)
        self.assertIn("local-rank-beyond-gpus", ids(probs))

    def test_torch_built_for_newer_cuda_than_the_driver(self):
        f = fp(0)
        f["driver"]["cuda"] = "12.8"
        self.assertIn("driver-too-old-for-torch-cuda", ids(compare.compare([f], 1)))


class Launcher(unittest.TestCase):
    def test_torchrun(self):
        i = launcher.Identity({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "MASTER_ADDR": "h",
                               "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": "abc"})
        self.assertEqual((i.launcher, i.rank, i.world_size, i.local_rank), ("torch", 3, 4, 1))
        self.assertEqual(i.job_id, "abc")

    def test_slurm_and_openmpi_and_pmi(self):
        s = launcher.Identity({"SLURM_PROCID": "2", "SLURM_NTASKS": "8", "SLURM_LOCALID": "0", "SLURM_JOB_ID": "7"})
        self.assertEqual((s.launcher, s.rank, s.world_size, s.job_id), ("slurm", 2, 8, "slurm-7.0"))
        o = launcher.Identity({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2",
                               "OMPI_COMM_WORLD_LOCAL_RANK": "1"})
        self.assertEqual((o.launcher, o.rank, o.local_rank), ("openmpi", 1, 1))
        p = launcher.Identity({"PMI_RANK": "0", "PMI_SIZE": "2"})
        self.assertEqual(p.launcher, "pmi")

    def test_contradicting_variables(self):
        i = launcher.Identity({"RANK": "1", "WORLD_SIZE": "4", "SLURM_PROCID": "2", "SLURM_NTASKS": "4"})
        self.assertEqual(i.contradictions, ["RANK=1 but SLURM_PROCID=2"])
        self.assertEqual(launcher.Identity({"RANK": "5", "WORLD_SIZE": "4"}).contradictions,
                         ["rank 5 is outside WORLD_SIZE=4"])

    def test_a_word_where_a_number_belongs(self):
        with self.assertRaisesRegex(launcher.LauncherError, "RANK='x' is not an integer"):
            launcher.Identity({"RANK": "x"})


class Probe(unittest.TestCase):
    def test_env_hash_is_the_cpp_preflights(self):
        # FNV-1a over "NCCL_PROTO=Simple\n" (the C++ preflight's hash of the same environment).
        self.assertEqual(probe.env_hash({"NCCL_PROTO": "Simple", "RANK": "1", "NCCL_HOSTID": "x"}),
                         probe.env_hash({"NCCL_PROTO": "Simple"}))
        self.assertNotEqual(probe.env_hash({"NCCL_PROTO": "Simple"}), probe.env_hash({}))

    def test_nccl_library_names_follow_the_one_table(self):
        table = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "suites", "data",
                             "nccl_library_names.csv")
        with open(table, newline="") as f:
            rows = list(csv.DictReader(ln for ln in f if not ln.startswith("#")))
        self.assertTrue(any(r["is_nccl"] == "yes" for r in rows) and any(r["is_nccl"] == "no" for r in rows))
        for r in rows:
            self.assertIn(r["is_nccl"], ("yes", "no"), r)
            self.assertEqual(probe.is_nccl_library(r["path"]), r["is_nccl"] == "yes", r["path"])

    def test_interfaces_include_loopback(self):
        names = [i["name"] for i in probe.interfaces()]
        self.assertIn("lo", names)

    def test_one_process_without_torch_reports_and_exits_by_status(self):
        env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
        env["PYTHONPATH"] = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
        r = subprocess.run([sys.executable, "-m", "gpucts_preflight"], env=env, capture_output=True, text=True,
                           timeout=60)
        self.assertIn("gpucts preflight: 1 rank(s)", r.stderr)
        self.assertIn(r.returncode, (0, 1), r.stderr)
        bad = subprocess.run([sys.executable, "-m", "gpucts_preflight", "--frob"], env=env, capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("unknown option --frob", bad.stderr)


    def test_target_starts_with_or_without_the_double_dash(self):
        # torchrun drops the "--" from a module's arguments: `torchrun -m gpucts_preflight -- train.py`
        # reaches the preflight as `train.py`.
        env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
        env["PYTHONPATH"] = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
        with tempfile.TemporaryDirectory() as d:
            script = os.path.join(d, "train.py")
            with open(script, "w") as f:
                f.write("import sys\nprint('target argv', sys.argv[1:])\n")
            for pre in ([], ["--"]):
                r = subprocess.run([sys.executable, "-m", "gpucts_preflight", "--warn-only"] + pre +
                                   [script, "--lr", "3"], env=env, capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("target argv ['--lr', '3']", r.stdout)

class SeedLaunchers(unittest.TestCase):
    """How the seed entries start a rank under each launcher (the runs themselves need a GPU)."""

    def setUp(self):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "repro"))
        import seed_causes
        self.sc = seed_causes

    def test_every_launched_cause_is_a_cause(self):
        self.assertTrue(set(self.sc.LAUNCHERS) <= set(self.sc.CAUSES))

    def test_torchrun_makes_each_rank_a_node_and_leaves_the_rank_variables_to_torchrun(self):
        env = self.sc.base_env(3, 2, 29511)
        argv = self.sc.launch("torchrun", "preflight", "py", 3, 2, env)
        self.assertEqual(argv[:3], ["py", "-m", "torch.distributed.run"])
        self.assertEqual(argv[argv.index("--node_rank") + 1], "2")
        self.assertEqual(argv[argv.index("--master_port") + 1], "29511")
        self.assertEqual(argv[-4:-1], ["-m", "gpucts_preflight", "--"])  # torchrun drops the "--"
        for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "NODE_RANK", "MASTER_PORT"):
            self.assertNotIn(k, env)
        self.assertIn("NCCL_HOSTID", env)

    def test_lightning_adds_the_callback_only_the_second_time(self):
        stack, pre = self.sc.base_env(3, 1, 1), self.sc.base_env(3, 1, 1)
        self.assertEqual(self.sc.launch("lightning", "stack", "py", 3, 1, stack)[1], self.sc.LIGHTNING_SCRIPT)
        self.sc.launch("lightning", "preflight", "py", 3, 1, pre)
        self.assertNotIn("GPUCTS_SEED_PREFLIGHT", stack)
        self.assertEqual((pre["GPUCTS_SEED_PREFLIGHT"], pre["NODE_RANK"], pre["LOCAL_RANK"]), ("1", "1", "0"))


if __name__ == "__main__":
    unittest.main()
