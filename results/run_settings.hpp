// The NCCL, torch and NVSHMEM settings a run was under, as a bundle records them: gpucts sets none
// of them itself, so what is recorded is what the user's environment (or a site's GPUCTS_PIN_ENV
// build option) set. NVLS (NVLink SHARP, NCCL's multicast path on NVSwitch systems) is named apart:
// with it off, its algorithms were not exercised and the bandwidth is that of the other paths.
#pragma once
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace cts {

// Whether a variable belongs in the record: NCCL_*, TORCH_* and NVSHMEM_*.
bool is_stack_setting_name(const std::string& name);

// From NAME -> VALUE (other names are left out):
//   {"nvls": "off" | "on" | "default", "nvls_off_by": ["NCCL_NVLS_ENABLE=0", ...],
//    "settings": {"NCCL_NVLS_ENABLE": "0", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", ...}}
// "default": NCCL_NVLS_ENABLE unset or 2 (NCCL takes NVLS where the NVSwitch fabric offers it);
// "off": NCCL_NVLS_ENABLE=0, or NCCL_ALGO naming algorithms without any NVLS one.
nlohmann::json stack_settings_record(const std::map<std::string, std::string>& env);

// The sentence a summary shows when NVLS was off, "" otherwise:
// "NVLS was off (NCCL_NVLS_ENABLE=0): NVLS paths were not tested".
std::string nvls_note(const nlohmann::json& record);

}  // namespace cts
