// What the files of the campaign report share: campaign.cpp reads the releases and builds the
// tables, campaign_claims.cpp holds the matrix's claims against the runs, campaign_doc.cpp writes
// the report. Used by those three files only.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "matrix/matrix.hpp"
#include "report/campaign.hpp"

namespace cts::campaign::parts {

// How the report names a release: "2.21.5".
std::string label(const Release& r);
// A property of a case (by key) as the release's gtest XML recorded it; "" where absent.
std::string prop(const Release& r, const std::string& key, const std::string& name);
// Defect ids of nccl_defects.csv ("nccl-1950", "nccl-2.30.3-symk-ll-unaligned") named by a
// comma-separated property value or a finding's text.
std::vector<std::string> defect_ids(const std::string& text);
// Every finding object of a check.json, wherever its "findings" arrays sit.
void collect_findings(const nlohmann::json& j, std::vector<nlohmann::json>& out);
// A string field of a JSON object, "" where absent or not a string.
std::string str_field(const nlohmann::json& j, const char* k);

// The claims of each data file held against the releases, appended to r.claims.
void feature_claims(Report& r, const Matrix& m);
void op_claims(Report& r, const Matrix& m);
void defect_claims(Report& r);

}  // namespace cts::campaign::parts
