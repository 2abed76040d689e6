// A small JSON reader/writer for what libtritonserver.so and Operon's own
// backends need from JSON: model configs (output names, `parameters`) and
// the backend config map. Header-only so that each backend gets its own
// private copy (they are built with -fvisibility=hidden; nothing of this is
// exported). Why not rapidjson/nlohmann: `npm install` must build on a bare
// machine with only g++, and no npm package ships a C++ JSON library.
//
// Numbers keep their source text (`raw`) so that 64-bit integers survive a
// parse/serialize round trip unchanged.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace operon_json {

struct Value {
  enum Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Null;
  bool boolean = false;
  std::string text;  // String: the decoded string; Number: the source text
  std::vector<Value> items;                            // Array
  std::vector<std::pair<std::string, Value>> members;  // Object, in order

  bool IsObject() const { return kind == Object; }
  bool IsArray() const { return kind == Array; }
  bool IsString() const { return kind == String; }
  // The member `key` of an object, or nullptr.
  const Value* Find(const std::string& key) const {
    if (kind != Object) return nullptr;
    for (const auto& m : members)
      if (m.first == key) return &m.second;
    return nullptr;
  }
  double AsDouble() const { return kind == Number ? std::strtod(text.c_str(), nullptr) : 0; }
  int64_t AsInt() const {
    if (kind == Number) return std::strtoll(text.c_str(), nullptr, 10);
    if (kind == String) return std::strtoll(text.c_str(), nullptr, 10);  // protobuf JSON writes int64 as strings
    return 0;
  }
};

class Parser {
 public:
  Parser(const char* data, size_t size) : p_(data), end_(data + size), begin_(data) {}

  // Parses one JSON document; on failure returns false with `error` set to
  // a message naming the byte offset.
  bool Parse(Value* out, std::string* error) {
    SkipSpace();
    if (!ParseValue(out, 0)) {
      *error = error_;
      return false;
    }
    SkipSpace();
    if (p_ != end_) {
      *error = Fail("unexpected text after the JSON value");
      return false;
    }
    return true;
  }

 private:
  std::string Fail(const char* what) {
    error_ = std::string(what) + " at byte " + std::to_string(p_ - begin_);
    return error_;
  }
  void SkipSpace() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool Literal(const char* word) {
    const char* q = p_;
    for (; *word; ++word, ++q)
      if (q >= end_ || *q != *word) return false;
    p_ = q;
    return true;
  }
  bool ParseValue(Value* v, int depth) {
    if (depth > 200) return Fail("JSON nested too deeply"), false;
    if (p_ >= end_) return Fail("unexpected end of JSON"), false;
    char c = *p_;
    if (c == '{') return ParseObject(v, depth);
    if (c == '[') return ParseArray(v, depth);
    if (c == '"') {
      v->kind = Value::String;
      return ParseString(&v->text);
    }
    if (c == 't' && Literal("true")) { v->kind = Value::Bool; v->boolean = true; return true; }
    if (c == 'f' && Literal("false")) { v->kind = Value::Bool; v->boolean = false; return true; }
    if (c == 'n' && Literal("null")) { v->kind = Value::Null; return true; }
    if (c == '-' || (c >= '0' && c <= '9')) return ParseNumber(v);
    return Fail("unexpected character in JSON"), false;
  }
  bool ParseNumber(Value* v) {
    const char* start = p_;
    if (*p_ == '-') ++p_;
    bool digits = false;
    while (p_ < end_ && ((*p_ >= '0' && *p_ <= '9') || *p_ == '.' || *p_ == 'e' || *p_ == 'E' || *p_ == '+' || *p_ == '-')) {
      digits = true;
      ++p_;
    }
    if (!digits) return Fail("bad number in JSON"), false;
    v->kind = Value::Number;
    v->text.assign(start, p_);
    return true;
  }
  static void PutUtf8(std::string* s, uint32_t cp) {
    if (cp < 0x80) s->push_back(static_cast<char>(cp));
    else if (cp < 0x800) { s->push_back(static_cast<char>(0xC0 | (cp >> 6))); s->push_back(static_cast<char>(0x80 | (cp & 0x3F))); }
    else if (cp < 0x10000) { s->push_back(static_cast<char>(0xE0 | (cp >> 12))); s->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F))); s->push_back(static_cast<char>(0x80 | (cp & 0x3F))); }
    else { s->push_back(static_cast<char>(0xF0 | (cp >> 18))); s->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F))); s->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F))); s->push_back(static_cast<char>(0x80 | (cp & 0x3F))); }
  }
  bool Hex4(uint32_t* out) {
    if (end_ - p_ < 4) return false;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = *p_++;
      v <<= 4;
      if (c >= '0' && c <= '9') v |= c - '0';
      else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
      else return false;
    }
    *out = v;
    return true;
  }
  bool ParseString(std::string* out) {
    ++p_;  // opening quote
    while (p_ < end_ && *p_ != '"') {
      char c = *p_++;
      if (c != '\\') { out->push_back(c); continue; }
      if (p_ >= end_) break;
      char e = *p_++;
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          uint32_t cp;
          if (!Hex4(&cp)) return Fail("bad \\u escape in JSON string"), false;
          if (cp >= 0xD800 && cp < 0xDC00 && end_ - p_ >= 6 && p_[0] == '\\' && p_[1] == 'u') {
            p_ += 2;
            uint32_t low;
            if (!Hex4(&low)) return Fail("bad \\u escape in JSON string"), false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          PutUtf8(out, cp);
          break;
        }
        default: return Fail("bad escape in JSON string"), false;
      }
    }
    if (p_ >= end_) return Fail("unterminated JSON string"), false;
    ++p_;  // closing quote
    return true;
  }
  bool ParseArray(Value* v, int depth) {
    v->kind = Value::Array;
    ++p_;
    SkipSpace();
    if (p_ < end_ && *p_ == ']') { ++p_; return true; }
    while (true) {
      SkipSpace();
      v->items.emplace_back();
      if (!ParseValue(&v->items.back(), depth + 1)) return false;
      SkipSpace();
      if (p_ < end_ && *p_ == ',') { ++p_; continue; }
      if (p_ < end_ && *p_ == ']') { ++p_; return true; }
      return Fail("expected ',' or ']' in JSON array"), false;
    }
  }
  bool ParseObject(Value* v, int depth) {
    v->kind = Value::Object;
    ++p_;
    SkipSpace();
    if (p_ < end_ && *p_ == '}') { ++p_; return true; }
    while (true) {
      SkipSpace();
      if (p_ >= end_ || *p_ != '"') return Fail("expected a member name in JSON object"), false;
      std::string key;
      if (!ParseString(&key)) return false;
      SkipSpace();
      if (p_ >= end_ || *p_ != ':') return Fail("expected ':' in JSON object"), false;
      ++p_;
      SkipSpace();
      v->members.emplace_back(std::move(key), Value());
      if (!ParseValue(&v->members.back().second, depth + 1)) return false;
      SkipSpace();
      if (p_ < end_ && *p_ == ',') { ++p_; continue; }
      if (p_ < end_ && *p_ == '}') { ++p_; return true; }
      return Fail("expected ',' or '}' in JSON object"), false;
    }
  }

  const char* p_;
  const char* end_;
  const char* begin_;
  std::string error_;
};

inline bool Parse(const std::string& text, Value* out, std::string* error) {
  Parser parser(text.data(), text.size());
  return parser.Parse(out, error);
}

inline void WriteString(std::string* out, const std::string& s) {
  static const char* hex = "0123456789abcdef";
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      default:
        if (c < 0x20) {
          *out += "\\u00";
          out->push_back(hex[c >> 4]);
          out->push_back(hex[c & 15]);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

inline void Write(std::string* out, const Value& v) {
  switch (v.kind) {
    case Value::Null: *out += "null"; break;
    case Value::Bool: *out += v.boolean ? "true" : "false"; break;
    case Value::Number: *out += v.text; break;
    case Value::String: WriteString(out, v.text); break;
    case Value::Array:
      out->push_back('[');
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i) out->push_back(',');
        Write(out, v.items[i]);
      }
      out->push_back(']');
      break;
    case Value::Object:
      out->push_back('{');
      for (size_t i = 0; i < v.members.size(); ++i) {
        if (i) out->push_back(',');
        WriteString(out, v.members[i].first);
        out->push_back(':');
        Write(out, v.members[i].second);
      }
      out->push_back('}');
      break;
  }
}

// The string value of a Triton model config parameter:
// config.parameters[key].string_value, or nullptr when absent.
inline const std::string* ConfigParameter(const Value& config, const std::string& key) {
  const Value* params = config.Find("parameters");
  const Value* p = params ? params->Find(key) : nullptr;
  const Value* s = p ? p->Find("string_value") : nullptr;
  return s && s->IsString() ? &s->text : nullptr;
}

}  // namespace operon_json
