#include "matrix/fingerprint.hpp"

#include <cctype>
#include <climits>

#include "matrix/input.hpp"

namespace cts {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& origin, const std::string& field, const std::string& why) {
  throw FingerprintError(origin + ": field '" + field + "': " + why);
}

std::optional<Version> version_field(const json& obj, const char* key, VersionKind kind,
                                     const std::string& origin, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  std::string field = path.empty() ? key : path + "." + key;
  try {
    if (it->is_number_integer()) return Version::from_code(it->get<long long>(), kind);
    if (it->is_string()) return Version::parse(it->get<std::string>(), kind);
  } catch (const VersionError& e) {
    bad(origin, field, e.what());
  }
  bad(origin, field, "expected a version string or integer code");
}

std::optional<std::string> string_field(const json& obj, const char* key, const std::string& origin,
                                        const std::string& path = "") {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) bad(origin, path.empty() ? key : path + "." + key, "expected a string");
  return it->get<std::string>();
}

// An integer in [lo, INT_MAX]: 2^32 is refused, never read as 0.
int int_field(const json& v, const std::string& origin, const std::string& field, long long lo) {
  bool in_range =
      v.is_number_integer() &&
      (v.is_number_unsigned() ? v.get<unsigned long long>() <= static_cast<unsigned long long>(INT_MAX)
                              : v.get<long long>() >= lo && v.get<long long>() <= INT_MAX);
  if (!in_range || v.get<long long>() < lo)
    bad(origin, field, "expected an integer from " + std::to_string(lo) + " to " + std::to_string(INT_MAX));
  return static_cast<int>(v.get<long long>());
}

const json* object_field(const json& obj, const char* key, const std::string& origin) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  if (!it->is_object()) bad(origin, key, "expected an object");
  return &*it;
}

void put_version(json& j, const char* key, const std::optional<Version>& v) {
  if (v) j[key] = v->raw.empty() ? v->str() : v->raw;
}

const std::vector<std::string> kKnownTop = {
    "schema",       "host", "rank",       "boot_id",   "driver",    "cuda_runtime",
    "cuda_toolkit", "nccl", "cudnn",      "torch",     "lightning", "compiler",
    "gpus",         "p2p",  "interfaces", "shm_bytes", "env",       "nccl_debug_file"};

}  // namespace

std::optional<std::string> Fingerprint::nccl_host_name() const {
  auto r = extra.find("gpucts_rank");
  if (r != extra.end() && r->is_object() && r->contains("nccl_hostid") && (*r)["nccl_hostid"].is_string())
    return (*r)["nccl_hostid"].get<std::string>();
  if (env) {
    auto it = env->find("NCCL_HOSTID");
    if (it != env->end()) return it->second;
  }
  return std::nullopt;
}

std::string Fingerprint::label(const std::string& fallback) const {
  // NCCL tells hosts apart by NCCL_HOSTID where it is set (simulated hosts share one machine name).
  std::optional<std::string> h = nccl_host_name();
  if (!h) h = host;
  if (h && rank) return *h + " rank " + std::to_string(*rank);
  if (h) return *h;
  if (rank) return "rank " + std::to_string(*rank);
  return fallback;
}

bool is_fingerprint_env_name(const std::string& n) {
  static const std::vector<std::string> exact = {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "MASTER_ADDR",
                                                 "MASTER_PORT",          "WORLD_SIZE",        "RANK",
                                                 "LOCAL_RANK",           "LOCAL_WORLD_SIZE"};
  if (n.rfind("NCCL_", 0) == 0 || n.rfind("TORCH_NCCL_", 0) == 0) return true;
  if (n.size() >= 5) {
    std::string head = n.substr(0, 5);
    for (auto& c : head) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (head == "NCCL_") return true;  // "nccl_debug": recorded so that the lint can say NCCL ignores it
  }
  for (const auto& e : exact)
    if (n == e) return true;
  return false;
}

json to_json(const Fingerprint& fp) {
  json j = fp.extra.is_object() ? fp.extra : json::object();
  j["schema"] = fp.schema;
  if (fp.host) j["host"] = *fp.host;
  if (fp.rank) j["rank"] = *fp.rank;
  if (fp.boot_id) j["boot_id"] = *fp.boot_id;
  if (fp.driver_version || fp.driver_cuda || fp.nvml_error) {
    json d = json::object();
    put_version(d, "version", fp.driver_version);
    put_version(d, "cuda", fp.driver_cuda);
    if (fp.nvml_error) d["nvml_error"] = *fp.nvml_error;
    j["driver"] = d;
  }
  put_version(j, "cuda_runtime", fp.cuda_runtime);
  put_version(j, "cuda_toolkit", fp.cuda_toolkit);
  if (fp.nccl_header || fp.nccl_runtime || fp.nccl_library) {
    json n = json::object();
    put_version(n, "header", fp.nccl_header);
    put_version(n, "runtime", fp.nccl_runtime);
    if (fp.nccl_library) n["library"] = *fp.nccl_library;
    j["nccl"] = n;
  }
  put_version(j, "cudnn", fp.cudnn);
  if (fp.torch) {
    json t = json::object();
    put_version(t, "version", fp.torch->version);
    put_version(t, "cuda", fp.torch->cuda);
    put_version(t, "nccl", fp.torch->nccl);
    put_version(t, "cudnn", fp.torch->cudnn);
    put_version(t, "cudnn_build", fp.torch->cudnn_build);
    if (fp.torch->cudnn_error) t["cudnn_error"] = *fp.torch->cudnn_error;
    put_version(t, "nccl_loaded", fp.torch->nccl_loaded);
    if (fp.torch->nccl_library) t["nccl_library"] = *fp.torch->nccl_library;
    if (fp.torch->nccl_static) t["nccl_static"] = *fp.torch->nccl_static;
    if (fp.torch->arch_list) t["arch_list"] = *fp.torch->arch_list;
    if (fp.torch->cxx11_abi) t["cxx11_abi"] = *fp.torch->cxx11_abi;
    j["torch"] = t;
  }
  if (fp.lightning || fp.pytorch_lightning) {
    json l = json::object();
    put_version(l, "lightning", fp.lightning);
    put_version(l, "pytorch_lightning", fp.pytorch_lightning);
    j["lightning"] = l;
  }
  if (!fp.compiler.empty()) j["compiler"] = fp.compiler;
  if (fp.gpus) {
    json arr = json::array();
    for (const auto& g : *fp.gpus) {
      json o = {{"index", g.index}};
      if (g.name) o["name"] = *g.name;
      if (g.cc) o["cc"] = g.cc->raw.empty() ? g.cc->str() : g.cc->raw;
      if (g.memory_mib) o["memory_mib"] = *g.memory_mib;
      if (g.pci) o["pci"] = *g.pci;
      if (g.uuid) o["uuid"] = *g.uuid;
      arr.push_back(o);
    }
    j["gpus"] = arr;
  }
  if (fp.p2p) j["p2p"] = *fp.p2p;
  if (fp.interfaces) {
    json arr = json::array();
    for (const auto& i : *fp.interfaces)
      arr.push_back({{"name", i.name}, {"up", i.up}, {"addresses", i.addresses}});
    j["interfaces"] = arr;
  }
  if (fp.shm_bytes) j["shm_bytes"] = *fp.shm_bytes;
  if (fp.env) j["env"] = *fp.env;
  if (fp.nccl_debug_file)
    j["nccl_debug_file"] = {{"folder", fp.nccl_debug_file->folder},
                            {"exists", fp.nccl_debug_file->exists},
                            {"writable", fp.nccl_debug_file->writable}};
  return j;
}

Fingerprint fingerprint_from_json(const json& j, const std::string& origin) {
  if (!j.is_object()) throw FingerprintError(origin + ": expected a JSON object at the top level");
  Fingerprint fp;
  auto schema = j.find("schema");
  if (schema == j.end())
    throw FingerprintError(origin + ": missing 'schema' (expected \"" + kFingerprintSchema + "\")");
  if (!schema->is_string() || schema->get<std::string>() != kFingerprintSchema)
    throw FingerprintError(origin + ": unknown schema " + schema->dump() + " (expected \"" +
                           kFingerprintSchema + "\")");
  fp.host = string_field(j, "host", origin);
  if (auto it = j.find("rank"); it != j.end() && !it->is_null()) {
    fp.rank = int_field(*it, origin, "rank", 0);
  }
  fp.boot_id = string_field(j, "boot_id", origin);
  if (const json* d = object_field(j, "driver", origin)) {
    fp.driver_version = version_field(*d, "version", VersionKind::Generic, origin, "driver");
    fp.driver_cuda = version_field(*d, "cuda", VersionKind::Cuda, origin, "driver");
    fp.nvml_error = string_field(*d, "nvml_error", origin, "driver");
  }
  fp.cuda_runtime = version_field(j, "cuda_runtime", VersionKind::Cuda, origin, "");
  fp.cuda_toolkit = version_field(j, "cuda_toolkit", VersionKind::Cuda, origin, "");
  if (const json* n = object_field(j, "nccl", origin)) {
    fp.nccl_header = version_field(*n, "header", VersionKind::Nccl, origin, "nccl");
    fp.nccl_runtime = version_field(*n, "runtime", VersionKind::Nccl, origin, "nccl");
    fp.nccl_library = string_field(*n, "library", origin, "nccl");
  }
  fp.cudnn = version_field(j, "cudnn", VersionKind::Cudnn, origin, "");
  if (const json* t = object_field(j, "torch", origin)) {
    TorchInfo ti;
    ti.version = version_field(*t, "version", VersionKind::Generic, origin, "torch");
    ti.cuda = version_field(*t, "cuda", VersionKind::Cuda, origin, "torch");
    ti.nccl = version_field(*t, "nccl", VersionKind::TorchNccl, origin, "torch");
    ti.cudnn = version_field(*t, "cudnn", VersionKind::Cudnn, origin, "torch");
    ti.cudnn_build = version_field(*t, "cudnn_build", VersionKind::Cudnn, origin, "torch");
    ti.cudnn_error = string_field(*t, "cudnn_error", origin, "torch");
    ti.nccl_loaded = version_field(*t, "nccl_loaded", VersionKind::Nccl, origin, "torch");
    ti.nccl_library = string_field(*t, "nccl_library", origin, "torch");
    if (auto it = t->find("nccl_static"); it != t->end() && !it->is_null()) {
      if (!it->is_boolean()) bad(origin, "torch.nccl_static", "expected true or false");
      ti.nccl_static = it->get<bool>();
    }
    if (auto it = t->find("arch_list"); it != t->end() && !it->is_null()) {
      if (!it->is_array()) bad(origin, "torch.arch_list", "expected an array of strings");
      std::vector<std::string> arches;
      for (const auto& a : *it) {
        if (!a.is_string()) bad(origin, "torch.arch_list", "expected an array of strings");
        arches.push_back(a.get<std::string>());
      }
      ti.arch_list = arches;
    }
    if (auto it = t->find("cxx11_abi"); it != t->end() && !it->is_null()) {
      if (!it->is_boolean()) bad(origin, "torch.cxx11_abi", "expected true or false");
      ti.cxx11_abi = it->get<bool>();
    }
    fp.torch = ti;
  }
  if (const json* l = object_field(j, "lightning", origin)) {
    fp.lightning = version_field(*l, "lightning", VersionKind::Generic, origin, "lightning");
    fp.pytorch_lightning = version_field(*l, "pytorch_lightning", VersionKind::Generic, origin, "lightning");
  }
  if (const json* c = object_field(j, "compiler", origin)) {
    for (auto it = c->begin(); it != c->end(); ++it) {
      if (!it->is_string()) bad(origin, "compiler." + it.key(), "expected a string");
      fp.compiler[it.key()] = it->get<std::string>();
    }
  }
  if (auto it = j.find("gpus"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) bad(origin, "gpus", "expected an array");
    std::vector<GpuInfo> gpus;
    int k = 0;
    for (const auto& g : *it) {
      std::string path = "gpus[" + std::to_string(k++) + "]";
      if (!g.is_object()) bad(origin, path, "expected an object");
      GpuInfo gi;
      if (auto ix = g.find("index"); ix != g.end()) {
        gi.index = int_field(*ix, origin, path + ".index", 0);
      } else {
        gi.index = k - 1;
      }
      gi.name = string_field(g, "name", origin, path);
      gi.cc = version_field(g, "cc", VersionKind::Generic, origin, path);
      if (auto m = g.find("memory_mib"); m != g.end() && !m->is_null()) {
        if (!m->is_number_integer() ||
            (m->is_number_unsigned() && m->get<unsigned long long>() > LLONG_MAX) || m->get<long long>() < 0)
          bad(origin, path + ".memory_mib", "expected an integer from 0 to " + std::to_string(LLONG_MAX));
        gi.memory_mib = m->get<long long>();
      }
      gi.pci = string_field(g, "pci", origin, path);
      gi.uuid = string_field(g, "uuid", origin, path);
      gpus.push_back(gi);
    }
    fp.gpus = gpus;
  }
  if (auto it = j.find("p2p"); it != j.end() && !it->is_null()) {
    try {
      fp.p2p = it->get<std::vector<std::vector<bool>>>();
    } catch (const json::exception&) {
      bad(origin, "p2p", "expected an array of arrays of booleans");
    }
  }
  if (auto it = j.find("interfaces"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) bad(origin, "interfaces", "expected an array");
    std::vector<InterfaceInfo> ifs;
    for (const auto& i : *it) {
      if (!i.is_object() || !i.contains("name") || !i["name"].is_string())
        bad(origin, "interfaces", "each interface needs a string 'name'");
      InterfaceInfo ii;
      ii.name = i["name"].get<std::string>();
      if (i.contains("up") && !i["up"].is_boolean())
        bad(origin, "interfaces." + ii.name + ".up", "expected true or false");
      ii.up = i.value("up", false);
      if (i.contains("addresses")) {
        try {
          ii.addresses = i["addresses"].get<std::vector<std::string>>();
        } catch (const json::exception&) {
          bad(origin, "interfaces." + ii.name + ".addresses", "expected an array of strings");
        }
      }
      ifs.push_back(ii);
    }
    fp.interfaces = ifs;
  }
  if (auto it = j.find("shm_bytes"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer() || (it->is_number_unsigned() && it->get<unsigned long long>() > LLONG_MAX) ||
        it->get<long long>() < 0)
      bad(origin, "shm_bytes", "expected an integer from 0 to " + std::to_string(LLONG_MAX));
    fp.shm_bytes = it->get<long long>();
  }
  if (const json* e = object_field(j, "env", origin)) {
    std::map<std::string, std::string> env;
    for (auto it = e->begin(); it != e->end(); ++it) {
      if (!it->is_string()) bad(origin, "env." + it.key(), "expected a string");
      env[it.key()] = it->get<std::string>();
    }
    fp.env = env;
  }
  if (const json* d = object_field(j, "nccl_debug_file", origin)) {
    NcclDebugFileFolder f;
    auto folder = string_field(*d, "folder", origin, "nccl_debug_file");
    if (!folder) bad(origin, "nccl_debug_file.folder", "expected a string");
    f.folder = *folder;
    for (auto [key, target] : {std::pair{"exists", &f.exists}, std::pair{"writable", &f.writable}}) {
      auto b = d->find(key);
      if (b == d->end() || !b->is_boolean())
        bad(origin, std::string("nccl_debug_file.") + key, "expected true or false");
      *target = b->get<bool>();
    }
    fp.nccl_debug_file = f;
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const auto& k : kKnownTop) known = known || it.key() == k;
    if (!known) fp.extra[it.key()] = *it;
  }
  return fp;
}

Fingerprint parse_fingerprint(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = parse_json(text, origin);  // "origin:line:column: malformed JSON: ..." (input.hpp)
  } catch (const InputError& e) {
    throw FingerprintError(e.what());
  }
  return fingerprint_from_json(j, origin);
}

// A fingerprint is a few kilobytes; 64 MiB leaves room for any real one and refuses /dev/zero.
inline constexpr std::size_t kMaxFingerprintBytes = std::size_t{64} << 20;

Fingerprint load_fingerprint_file(const std::string& path) {
  std::string text;
  try {
    text = read_input_file(path, kMaxFingerprintBytes);
  } catch (const InputError& e) {
    throw FingerprintError(e.what());
  }
  return parse_fingerprint(text, path);
}

}  // namespace cts
