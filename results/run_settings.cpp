#include "results/run_settings.hpp"

#include "matrix/input.hpp"

#include <algorithm>
#include <cctype>

namespace cts {
namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

// NCCL_ALGO as NCCL reads it: a list of algorithms, "^" excluding them, from 2.24 optionally per
// collective ("allreduce:ring,tree;..."). NVLS is off when the list excludes it or names only others.
bool algo_excludes_nvls(const std::string& value) {
  const std::string v = upper(value);
  if (v.empty()) return false;
  const bool names_nvls = v.find("NVLS") != std::string::npos;
  if (v.find('^') != std::string::npos) return names_nvls && v.find(':') == std::string::npos;
  return !names_nvls && v.find(':') == std::string::npos;
}

}  // namespace

bool is_stack_setting_name(const std::string& name) {
  return starts_with(name, "NCCL_") || starts_with(name, "TORCH_") || starts_with(name, "NVSHMEM_");
}

nlohmann::json stack_settings_record(const std::map<std::string, std::string>& env) {
  nlohmann::json settings = nlohmann::json::object();
  for (const auto& [k, v] : env)
    if (is_stack_setting_name(k)) settings[to_valid_utf8(k)] = to_valid_utf8(v);  // JSON is UTF-8
  nlohmann::json off_by = nlohmann::json::array();
  std::string state = "default";
  if (auto it = env.find("NCCL_NVLS_ENABLE"); it != env.end()) {
    if (it->second == "0") {
      state = "off";
      off_by.push_back("NCCL_NVLS_ENABLE=0");
    } else if (it->second == "1") {
      state = "on";
    }
  }
  if (auto it = env.find("NCCL_ALGO"); it != env.end() && algo_excludes_nvls(it->second)) {
    state = "off";
    off_by.push_back("NCCL_ALGO=" + to_valid_utf8(it->second));
  }
  // torch's symmetric memory and NVSHMEM have their own multicast switch: named beside NCCL's.
  for (const char* k : {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"})
    if (auto it = env.find(k); it != env.end() && it->second == "1" && state == "off")
      off_by.push_back(std::string(k) + "=1");
  return {{"nvls", state}, {"nvls_off_by", off_by}, {"settings", settings}};
}

std::string nvls_note(const nlohmann::json& record) {
  if (!record.is_object() || record.value("nvls", "") != "off") return "";
  std::string by;
  if (auto it = record.find("nvls_off_by"); it != record.end() && it->is_array())
    for (const auto& b : *it)
      if (b.is_string()) by += (by.empty() ? "" : ", ") + b.get<std::string>();
  return "NVLS was off" + (by.empty() ? std::string() : " (" + by + ")") + ": NVLS paths were not tested";
}

}  // namespace cts
