# Writes a .cpp that holds the matrix data files, so `gpucts check` needs no source tree.
# Inputs: OUT (the .cpp), FILES (absolute paths, ';'-separated).
set(body "")
foreach(f IN LISTS FILES)
  get_filename_component(name "${f}" NAME)
  file(READ "${f}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
  string(APPEND body "  {\"${name}\", std::string{${bytes}} },\n")
endforeach()
set(text "// Generated from matrix/data by matrix/embed_data.cmake. Do not edit.
#include <map>
#include <string>
namespace cts {
const std::map<std::string, std::string>& builtin_matrix_files() {
  static const std::map<std::string, std::string> files = {
${body}  };
  return files;
}
}  // namespace cts
")
file(WRITE "${OUT}.tmp" "${text}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
