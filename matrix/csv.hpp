// The strict CSV dialect of the matrix data (matrix/data/*.csv): RFC 4180 quoting, a header row
// naming the columns, whole-line `#` comments, blank lines ignored, CRLF or LF, a UTF-8 BOM
// tolerated at the start. Lists inside a cell are separated by ';'. Every error names
// `file:line` and what is wrong, so a person editing the data finds the row at once.
#pragma once
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace cts {

class MatrixError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CsvRow {
  int line = 0;                                            // 1-based line where the record starts
  std::map<std::string, std::string> cells;                // column -> text (missing optional column -> "")
  const std::string& at(const std::string& column) const;  // "" for an absent optional column
};

struct CsvTable {
  std::string file;                  // name used in messages ("torch.csv")
  std::vector<std::string> columns;  // header order
  std::vector<CsvRow> rows;
};

// Parses `text`; `required` columns must all appear in the header, every header column must be
// in `required` or `optional`. Throws MatrixError("file:line: ...").
CsvTable parse_csv(const std::string& text, const std::string& file, const std::set<std::string>& required,
                   const std::set<std::string>& optional);

// "a; b;c" -> {"a","b","c"}; empty cell -> {}.
std::vector<std::string> split_list(const std::string& cell);

}  // namespace cts
