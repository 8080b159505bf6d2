#include "zeus/util/json.h"

#include <cmath>
#include <utility>

namespace zeus {

using nlohmann::json;

namespace {

// Everything after nlohmann's "[json.exception.<kind>.<id>] " prefix.
std::string WithoutExceptionPrefix(const char* what) {
  std::string_view text(what);
  if (!text.empty() && text.front() == '[') {
    size_t end = text.find("] ");
    if (end != std::string_view::npos) text.remove_prefix(end + 2);
  }
  return std::string(text);
}

std::string Shorten(std::string text, size_t max_chars) {
  if (text.size() > max_chars) text = text.substr(0, max_chars - 3) + "...";
  return text;
}

// Builds the document from nlohmann's SAX events with an explicit stack, so
// nesting costs heap, not call stack, and stops at the first problem.
class BoundedBuilder {
 public:
  explicit BoundedBuilder(int max_depth) : max_depth_(max_depth) {}

  bool null() { return Insert(json(nullptr)); }
  bool boolean(bool value) { return Insert(json(value)); }
  bool number_integer(json::number_integer_t value) { return Insert(json(value)); }
  bool number_unsigned(json::number_unsigned_t value) { return Insert(json(value)); }
  bool number_float(json::number_float_t value, const std::string& text) {
    if (!std::isfinite(value)) return Fail("number " + text + " at " + Path() + OutOfRange());
    return Insert(json(value));
  }
  bool string(std::string& value) { return Insert(json(std::move(value))); }
  bool binary(json::binary_t& /*value*/) { return Fail("binary values are not JSON"); }

  bool start_object(size_t /*size*/) { return Open(json::object()); }
  bool key(std::string& name) {
    if (stack_.back()->contains(name)) {
      return Fail("duplicate key '" + Shorten(name, 64) + "' in the object at " + Path(false));
    }
    keys_.back() = std::move(name);
    return true;
  }
  bool end_object() { return Close(); }
  bool start_array(size_t /*size*/) { return Open(json::array()); }
  bool end_array() { return Close(); }

  bool parse_error(size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& e) {
    if (e.id == 406) {  // out_of_range.406: a number overflowing a double.
      return Fail("not valid JSON: " + WithoutExceptionPrefix(e.what()) + " at byte " +
                  std::to_string(position) + OutOfRange());
    }
    return Fail("not valid JSON: " + WithoutExceptionPrefix(e.what()));
  }

  const std::string& error() const { return error_; }
  json TakeRoot() { return std::move(root_); }

 private:
  static std::string OutOfRange() { return " is outside the range of a double"; }

  bool Fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }

  bool Open(json container) {
    if (static_cast<int>(stack_.size()) >= max_depth_) {
      return Fail("nesting deeper than " + std::to_string(max_depth_) + " levels at " + Path());
    }
    json* opened = Place(std::move(container));
    stack_.push_back(opened);
    keys_.emplace_back();
    return true;
  }

  bool Close() {
    stack_.pop_back();
    keys_.pop_back();
    return true;
  }

  bool Insert(json value) {
    Place(std::move(value));
    return true;
  }

  // Stores `value` where the parser is and returns where it now lives. A
  // parent's storage does not move while a child is open (the parent only
  // grows after the child closes), so the pointers on the stack stay valid.
  json* Place(json value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    json& slot = parent[keys_.back()];
    slot = std::move(value);
    return &slot;
  }

  // "$", "$.a[2]": where the next value goes (or, without `pending`, the
  // innermost open container). At most ~100 characters.
  std::string Path(bool pending = true) const {
    std::string path = "$";
    const size_t levels = stack_.size();
    for (size_t i = 0; i < levels; ++i) {
      const bool last = i + 1 == levels;
      if (last && !pending) break;
      const json& container = *stack_[i];
      if (container.is_array()) {
        size_t index = container.size() - (last ? 0 : 1);
        path += "[" + std::to_string(index) + "]";
      } else {
        path += "." + keys_[i];
      }
      if (path.size() > 100) return Shorten(std::move(path), 100);
    }
    return path;
  }

  const int max_depth_;
  json root_;
  std::vector<json*> stack_;       // Open containers, outermost first.
  std::vector<std::string> keys_;  // Per open container: the current key (objects).
  std::string error_;
};

}  // namespace

StatusOr<json> ParseJson(std::string_view text, std::string_view source, const JsonLimits& limits) {
  const std::string prefix = std::string(source) + ": ";
  if (text.size() > limits.max_bytes) {
    return InvalidArgumentError(prefix + std::to_string(text.size()) +
                                " bytes exceeds the limit of " + std::to_string(limits.max_bytes) +
                                " bytes");
  }
  BoundedBuilder builder(limits.max_depth);
  bool ok = json::sax_parse(text.begin(), text.end(), &builder, json::input_format_t::json,
                            /*strict=*/true, /*ignore_comments=*/false);
  if (!ok || !builder.error().empty()) {
    return InvalidArgumentError(
        prefix + (builder.error().empty() ? std::string("not valid JSON") : builder.error()));
  }
  return builder.TakeRoot();
}

std::string DescribeJson(const json& value) {
  return Shorten(value.dump(-1, ' ', false, json::error_handler_t::replace), 64);
}

// --- JsonFields -------------------------------------------------------------

StatusOr<JsonFields> JsonFields::Of(const json& value, std::string context,
                                    std::initializer_list<std::string_view> allowed) {
  JsonFields fields(&value, std::move(context), "");
  if (!value.is_object()) {
    std::string prefix = fields.context_.empty() ? "" : fields.context_ + ": ";
    return InvalidArgumentError(prefix + "expected a JSON object, got " + DescribeJson(value));
  }
  if (allowed.size() == 0) return fields;
  for (const auto& item : value.items()) {
    bool known = false;
    for (std::string_view name : allowed) known = known || item.key() == name;
    if (!known) return fields.Error(Shorten(item.key(), 64), "unknown field");
  }
  return fields;
}

bool JsonFields::Has(std::string_view field) const { return Find(field) != nullptr; }

const json* JsonFields::Find(std::string_view field) const {
  auto it = object_->find(field);
  if (it == object_->end() || it->is_null()) return nullptr;
  return &*it;
}

Status JsonFields::Error(std::string_view field, std::string_view detail) const {
  std::string message = context_.empty() ? "" : context_ + ": ";
  if (path_.empty()) {
    message += "field '" + std::string(field) + "'";
  } else {
    message += path_ + "." + std::string(field);
  }
  return InvalidArgumentError(message + ": " + std::string(detail));
}

Status JsonFields::Expected(std::string_view field, std::string_view what,
                            const json& value) const {
  return Error(field, "expected " + std::string(what) + ", got " + DescribeJson(value));
}

namespace {

std::string IntRange(int64_t min, int64_t max) {
  if (min == JsonFields::kMinInt && max == JsonFields::kMaxInt) return "an integer";
  if (max == JsonFields::kMaxInt) return "an integer >= " + std::to_string(min);
  return "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
}

std::string DoubleRange(double min, double max) {
  auto text = [](double v) { return json(v).dump(); };
  if (min == -JsonFields::kMaxDouble && max == JsonFields::kMaxDouble) return "a number";
  if (max == JsonFields::kMaxDouble) return "a number >= " + text(min);
  return "a number in [" + text(min) + ", " + text(max) + "]";
}

}  // namespace

StatusOr<int64_t> JsonFields::CheckInt(std::string_view field, const json& value, int64_t min,
                                       int64_t max) const {
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(max) || static_cast<int64_t>(v) < min) {
      return Expected(field, IntRange(min, max), value);
    }
    return static_cast<int64_t>(v);
  }
  if (!value.is_number_integer()) return Expected(field, IntRange(min, max), value);
  const int64_t v = value.get<int64_t>();
  if (v < min || v > max) return Expected(field, IntRange(min, max), value);
  return v;
}

StatusOr<double> JsonFields::CheckDouble(std::string_view field, const json& value, double min,
                                         double max) const {
  if (!value.is_number()) return Expected(field, DoubleRange(min, max), value);
  const double v = value.get<double>();
  if (std::isnan(v)) return Error(field, "expected a finite number, got NaN");
  if (std::isinf(v))
    return Error(field, v > 0 ? "expected a finite number, got Infinity"
                              : "expected a finite number, got -Infinity");
  if (v < min || v > max) {
    return Expected(field, DoubleRange(min, max), value);
  }
  return v;
}

StatusOr<std::optional<int64_t>> JsonFields::OptionalInt(std::string_view field, int64_t min,
                                                         int64_t max) const {
  const json* value = Find(field);
  if (value == nullptr) return std::optional<int64_t>();
  ZEUS_ASSIGN_OR_RETURN(int64_t v, CheckInt(field, *value, min, max));
  return std::optional<int64_t>(v);
}

StatusOr<int64_t> JsonFields::Int(std::string_view field, int64_t min, int64_t max) const {
  ZEUS_ASSIGN_OR_RETURN(std::optional<int64_t> v, OptionalInt(field, min, max));
  if (!v) return Error(field, "required");
  return *v;
}

StatusOr<std::optional<uint64_t>> JsonFields::OptionalUint64(std::string_view field) const {
  const json* value = Find(field);
  if (value == nullptr) return std::optional<uint64_t>();
  if (value->is_number_unsigned()) return std::optional<uint64_t>(value->get<uint64_t>());
  return Expected(field, "a non-negative integer", *value);
}

StatusOr<std::optional<double>> JsonFields::OptionalDouble(std::string_view field, double min,
                                                           double max) const {
  const json* value = Find(field);
  if (value == nullptr) return std::optional<double>();
  ZEUS_ASSIGN_OR_RETURN(double v, CheckDouble(field, *value, min, max));
  return std::optional<double>(v);
}

StatusOr<double> JsonFields::Double(std::string_view field, double min, double max) const {
  ZEUS_ASSIGN_OR_RETURN(std::optional<double> v, OptionalDouble(field, min, max));
  if (!v) return Error(field, "required");
  return *v;
}

StatusOr<std::optional<bool>> JsonFields::OptionalBool(std::string_view field) const {
  const json* value = Find(field);
  if (value == nullptr) return std::optional<bool>();
  if (!value->is_boolean()) return Expected(field, "a boolean", *value);
  return std::optional<bool>(value->get<bool>());
}

StatusOr<bool> JsonFields::Bool(std::string_view field) const {
  ZEUS_ASSIGN_OR_RETURN(std::optional<bool> v, OptionalBool(field));
  if (!v) return Error(field, "required");
  return *v;
}

StatusOr<std::optional<std::string>> JsonFields::OptionalString(std::string_view field) const {
  const json* value = Find(field);
  if (value == nullptr) return std::optional<std::string>();
  if (!value->is_string()) return Expected(field, "a string", *value);
  return std::optional<std::string>(value->get<std::string>());
}

StatusOr<std::string> JsonFields::String(std::string_view field) const {
  ZEUS_ASSIGN_OR_RETURN(std::optional<std::string> v, OptionalString(field));
  if (!v) return Error(field, "required");
  return std::move(*v);
}

StatusOr<const json*> JsonFields::Array(std::string_view field) const {
  const json* value = Find(field);
  if (value == nullptr) return Error(field, "required");
  if (!value->is_array()) return Expected(field, "an array", *value);
  return value;
}

StatusOr<std::vector<int64_t>> JsonFields::IntArray(std::string_view field, int64_t min,
                                                    int64_t max) const {
  ZEUS_ASSIGN_OR_RETURN(const json* array, Array(field));
  std::vector<int64_t> values;
  values.reserve(array->size());
  for (size_t i = 0; i < array->size(); ++i) {
    ZEUS_ASSIGN_OR_RETURN(int64_t v, CheckInt(std::string(field) + "[" + std::to_string(i) + "]",
                                              (*array)[i], min, max));
    values.push_back(v);
  }
  return values;
}

StatusOr<std::vector<double>> JsonFields::DoubleArray(std::string_view field, double min,
                                                      double max) const {
  ZEUS_ASSIGN_OR_RETURN(const json* array, Array(field));
  std::vector<double> values;
  values.reserve(array->size());
  for (size_t i = 0; i < array->size(); ++i) {
    ZEUS_ASSIGN_OR_RETURN(double v, CheckDouble(std::string(field) + "[" + std::to_string(i) + "]",
                                                (*array)[i], min, max));
    values.push_back(v);
  }
  return values;
}

StatusOr<std::vector<bool>> JsonFields::BoolArray(std::string_view field) const {
  ZEUS_ASSIGN_OR_RETURN(const json* array, Array(field));
  std::vector<bool> values;
  values.reserve(array->size());
  for (size_t i = 0; i < array->size(); ++i) {
    if (!(*array)[i].is_boolean()) {
      return Expected(std::string(field) + "[" + std::to_string(i) + "]", "a boolean", (*array)[i]);
    }
    values.push_back((*array)[i].get<bool>());
  }
  return values;
}

StatusOr<JsonFields> JsonFields::Object(std::string_view field) const {
  const json* value = Find(field);
  if (value == nullptr) return Error(field, "required");
  if (!value->is_object()) return Expected(field, "an object", *value);
  std::string path = path_.empty() ? std::string(field) : path_ + "." + std::string(field);
  return JsonFields(value, context_, std::move(path));
}

StatusOr<JsonFields> JsonFields::Element(std::string_view field, size_t index) const {
  ZEUS_ASSIGN_OR_RETURN(const json* array, Array(field));
  std::string name = std::string(field) + "[" + std::to_string(index) + "]";
  if (index >= array->size()) return Error(name, "no such element");
  const json& value = (*array)[index];
  if (!value.is_object()) return Expected(name, "an object", value);
  return JsonFields(&value, context_, path_.empty() ? name : path_ + "." + name);
}

}  // namespace zeus
