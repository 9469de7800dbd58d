// Mantissa plugin SDK: the "key=value,key=value" option strings that plugins
// take at creation. Unknown keys and malformed values are errors, so a typo in
// a flag never silently falls back to a default.
#ifndef MANTISSA_PLUGINS_SDK_OPTIONS_H_
#define MANTISSA_PLUGINS_SDK_OPTIONS_H_

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "plugins/sdk/status.h"

namespace mnt::sdk {

class Options {
 public:
  // `context` names the plugin in error messages, e.g. "mlp options".
  static Status Parse(const char* text, const char* context, Options* out) {
    out->context_ = context;
    out->values_.clear();
    if (text == nullptr) return Status::Ok();
    std::string s(text);
    size_t pos = 0;
    while (pos <= s.size()) {
      size_t end = s.find(',', pos);
      if (end == std::string::npos) end = s.size();
      std::string item = Trim(s.substr(pos, end - pos));
      pos = end + 1;
      if (item.empty()) {
        if (end == s.size()) break;
        continue;
      }
      size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0) {
        return InvalidArgument(Format("%s: expected key=value, got '%s'",
                                      context, item.c_str()));
      }
      std::string key = Trim(item.substr(0, eq));
      if (out->values_.count(key)) {
        return InvalidArgument(
            Format("%s: key '%s' given twice", context, key.c_str()));
      }
      out->values_[key] = Trim(item.substr(eq + 1));
      if (end == s.size()) break;
    }
    return Status::Ok();
  }

  bool Has(const std::string& key) const { return values_.count(key) > 0; }

  // Fails when a key outside `known` was given.
  Status CheckKnown(const std::set<std::string>& known) const {
    for (const auto& [key, value] : values_) {
      if (!known.count(key)) {
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        return InvalidArgument(Format("%s: unknown key '%s' (known: %s)",
                                      context_.c_str(), key.c_str(),
                                      list.c_str()));
      }
    }
    return Status::Ok();
  }

  Status GetString(const std::string& key, std::string* out) const {
    auto it = values_.find(key);
    if (it != values_.end()) *out = it->second;
    return Status::Ok();
  }

  Status GetDouble(const std::string& key, double* out) const {
    auto it = values_.find(key);
    if (it == values_.end()) return Status::Ok();
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(it->second.c_str(), &end);
    if (it->second.empty() || *end != '\0' || errno != 0 || !std::isfinite(v)) {
      return Bad(key, it->second, "a finite number");
    }
    *out = v;
    return Status::Ok();
  }

  Status GetInt(const std::string& key, long long* out) const {
    auto it = values_.find(key);
    if (it == values_.end()) return Status::Ok();
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0' || errno != 0) {
      return Bad(key, it->second, "an integer");
    }
    *out = v;
    return Status::Ok();
  }

  // A list of integers separated by ':' (commas separate options), e.g.
  // "hidden=128:64".
  Status GetIntList(const std::string& key, std::vector<long long>* out) const {
    auto it = values_.find(key);
    if (it == values_.end()) return Status::Ok();
    std::vector<long long> result;
    const std::string& v = it->second;
    size_t pos = 0;
    while (pos < v.size()) {
      size_t end = v.find(':', pos);
      if (end == std::string::npos) end = v.size();
      std::string item = v.substr(pos, end - pos);
      char* stop = nullptr;
      errno = 0;
      long long x = std::strtoll(item.c_str(), &stop, 10);
      if (item.empty() || *stop != '\0' || errno != 0) {
        return Bad(key, v, "integers separated by ':'");
      }
      result.push_back(x);
      pos = end + 1;
    }
    *out = result;
    return Status::Ok();
  }

 private:
  static std::string Trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t");
    if (b == std::string::npos) return "";
    size_t e = s.find_last_not_of(" \t");
    return s.substr(b, e - b + 1);
  }
  Status Bad(const std::string& key, const std::string& value,
             const char* expected) const {
    return InvalidArgument(Format("%s: %s='%s' is not %s", context_.c_str(),
                                  key.c_str(), value.c_str(), expected));
  }

  std::string context_;
  std::map<std::string, std::string> values_;
};

}  // namespace mnt::sdk

#endif  // MANTISSA_PLUGINS_SDK_OPTIONS_H_
