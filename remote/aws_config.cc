#include "remote/aws_config.h"

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "remote/url.h"
#include "shardpack/file.h"

namespace shardpack::remote {
namespace {

using common::AsAbsl;

// The top-level settings of one section of an INI file, keys lower-cased.
using Section = absl::flat_hash_map<std::string, std::string>;

// One of the shared files, read (or found missing) once.
struct IniFile {
  std::string path;  // "" when there is none to look in (no HOME)
  std::string text;  // empty when missing
};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && absl::ascii_isspace(static_cast<unsigned char>(s.front()))) {
    s.remove_prefix(1);
  }
  while (!s.empty() && absl::ascii_isspace(static_cast<unsigned char>(s.back()))) {
    s.remove_suffix(1);
  }
  return s;
}

// The settings of section `[name]`, or nullopt when the file has none.
// Sections met twice are merged, the later value winning (as botocore).
// Indented lines are the nested settings of the key above them ("s3 =\n
// endpoint_url = ..."), which apply to one service only: skipped.
std::optional<Section> FindSection(std::string_view text, std::string_view name) {
  std::optional<Section> found;
  bool inside = false;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view raw = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    const bool indented = !raw.empty() && (raw.front() == ' ' || raw.front() == '\t');
    const std::string_view line = Trim(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      inside = Trim(line.substr(1, line.size() - 2)) == name;
      if (inside && !found) found.emplace();
      continue;
    }
    const size_t eq = line.find('=');
    if (!inside || indented || eq == std::string_view::npos) continue;
    std::string key = absl::AsciiStrToLower(AsAbsl(Trim(line.substr(0, eq))));
    (*found)[std::move(key)] = std::string(Trim(line.substr(eq + 1)));
  }
  return found;
}

// The variable's value; nullopt when unset or empty.
std::optional<std::string> Env(EnvLookup getenv, const char* name) {
  const char* value = getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

// The first of two variables that is set, its name in *source.
std::optional<std::string> FirstOf(EnvLookup getenv, const char* a, const char* b,
                                   std::string* source) {
  for (const char* name : {a, b}) {
    if (auto value = Env(getenv, name)) {
      *source = name;
      return value;
    }
  }
  return std::nullopt;
}

absl::StatusOr<IniFile> ReadIni(EnvLookup getenv, const char* variable, const char* default_rel) {
  IniFile file;
  if (auto path = Env(getenv, variable)) {
    file.path = *path;
  } else if (auto home = Env(getenv, "HOME")) {
    file.path = absl::StrCat(*home, "/", default_rel);
  } else {
    return file;
  }
  auto text = ReadSmallFile(file.path);
  if (text.ok()) {
    file.text = *std::move(text);
  } else if (!absl::IsNotFound(text.status())) {
    return common::WithMessage(text.status(), absl::StrCat("AWS shared file (", variable, "): ",
                                                           text.status().message()));
  }
  return file;
}

std::string Where(const IniFile& file, std::string_view section) {
  return absl::StrCat(file.path, " [", AsAbsl(section), "]");
}

// The credentials of a section, if it has a key id or a secret.
absl::Status TakeKeys(const Section& section, const std::string& where, AwsConfig* config) {
  auto get = [&](const char* key) {
    auto it = section.find(key);
    return it == section.end() ? std::string() : it->second;
  };
  std::string id = get("aws_access_key_id");
  std::string secret = get("aws_secret_access_key");
  if (id.empty() != secret.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": has ", id.empty() ? "aws_secret_access_key without aws_access_key_id"
                                    : "aws_access_key_id without aws_secret_access_key"));
  }
  config->access_key_id = std::move(id);
  config->secret_access_key = std::move(secret);
  config->session_token = get("aws_session_token");
  config->credentials_source = where;
  return absl::OkStatus();
}

absl::Status FromEnvironment(EnvLookup getenv, AwsConfig* config) {
  auto id = Env(getenv, "AWS_ACCESS_KEY_ID");
  auto secret = Env(getenv, "AWS_SECRET_ACCESS_KEY");
  if (id.has_value() != secret.has_value()) {
    return absl::InvalidArgumentError(
        id ? "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"
           : "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not");
  }
  if (!id) return absl::OkStatus();
  config->access_key_id = *id;
  config->secret_access_key = *secret;
  config->session_token = Env(getenv, "AWS_SESSION_TOKEN").value_or("");
  config->credentials_source = "AWS_ACCESS_KEY_ID";
  return absl::OkStatus();
}

// Region and endpoint: the variables first, then the profile's settings.
absl::Status RegionAndEndpoint(EnvLookup getenv, const Section& profile,
                               const std::string& profile_where, AwsConfig* config) {
  auto setting = [&](const char* key) -> std::optional<std::string> {
    auto it = profile.find(key);
    if (it == profile.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
  std::string source;
  std::optional<std::string> region = FirstOf(getenv, "AWS_REGION", "AWS_DEFAULT_REGION", &source);
  if (!region && (region = setting("region"))) source = profile_where;
  config->region = region.value_or("us-east-1");
  if (config->region.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") !=
      std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": region \"", common::Excerpt(config->region), "\" is not [a-z0-9-]+"));
  }
  std::optional<std::string> endpoint =
      FirstOf(getenv, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", &source);
  if (!endpoint && (endpoint = setting("endpoint_url"))) source = profile_where;
  if (!endpoint) return absl::OkStatus();
  SP_ASSIGN_OR_RETURN(config->endpoint, ParseEndpoint(*endpoint, source));
  config->endpoint_source = source;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<AwsConfig> LoadAwsConfig(EnvLookup getenv) {
  AwsConfig config;
  const std::optional<std::string> named = Env(getenv, "AWS_PROFILE");
  const std::string profile = named.value_or("default");
  const std::string config_section = profile == "default" ? profile : "profile " + profile;
  SP_ASSIGN_OR_RETURN(IniFile credentials,
                      ReadIni(getenv, "AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials"));
  SP_ASSIGN_OR_RETURN(IniFile shared, ReadIni(getenv, "AWS_CONFIG_FILE", ".aws/config"));
  const std::optional<Section> in_credentials = FindSection(credentials.text, profile);
  std::optional<Section> in_config = FindSection(shared.text, config_section);
  if (!in_config && profile == "default") in_config = FindSection(shared.text, "profile default");
  if (named && !in_credentials && !in_config) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AWS_PROFILE: no profile \"", common::Excerpt(profile), "\" in ",
        credentials.path.empty() ? "(no credentials file)" : credentials.path, " or ",
        shared.path.empty() ? "(no config file)" : shared.path));
  }
  SP_RETURN_IF_ERROR(FromEnvironment(getenv, &config));
  if (!config.has_credentials() && in_credentials) {
    SP_RETURN_IF_ERROR(TakeKeys(*in_credentials, Where(credentials, profile), &config));
  }
  if (!config.has_credentials() && in_config) {
    SP_RETURN_IF_ERROR(TakeKeys(*in_config, Where(shared, config_section), &config));
  }
  if (!config.has_credentials()) {
    config.credentials_source = absl::StrCat(
        "AWS_ACCESS_KEY_ID", credentials.path.empty() ? "" : ", ",
        credentials.path.empty() ? "" : Where(credentials, profile),
        shared.path.empty() ? "" : ", ", shared.path.empty() ? "" : Where(shared, config_section));
  }
  SP_RETURN_IF_ERROR(RegionAndEndpoint(getenv, in_config.value_or(Section()),
                                       Where(shared, config_section), &config));
  return config;
}

}  // namespace shardpack::remote
