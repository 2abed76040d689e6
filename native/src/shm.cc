// POSIX shared memory for Operon's gateway <-> worker transport.
//
// JS API (see index.ts for the contract and the pure-TS fallback):
//   create(name, byteLength): ArrayBuffer  shm_open(O_CREAT|O_EXCL) + ftruncate
//                                          + mmap(MAP_SHARED); sparse (see Create)
//   open(name, byteLength): ArrayBuffer    maps an existing segment
//   unlink(name): void                     shm_unlink; mappings stay valid
//   close(buffer): void                    detaches the ArrayBuffer, then munmaps
//   allocate(byteLength): ArrayBuffer      uninitialized process memory from a
//                                          recycling pool (see Allocate)
//
// The ArrayBuffers are external: V8 does not own the memory. A finalizer
// munmaps when the ArrayBuffer is collected, unless close() did so already;
// the mapping's size is reported to V8 as external memory so that dropped
// regions put pressure on the GC.
//
// Errors are JS Errors whose message names the call and the segment, with
// Node-style `code` (e.g. "EEXIST"), `errno` (negative), `syscall` and `path`.

#include <napi.h>
#include <uv.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <string>
#include <vector>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <unordered_map>

namespace {

struct Mapping {
  void* data;
  size_t length;
};

// Live mappings by address, so close() can find the length and the finalizer
// knows whether close() already unmapped. Touched only on the JS thread.
std::unordered_map<void*, Mapping*>& LiveMappings() {
  static auto* mappings = new std::unordered_map<void*, Mapping*>();
  return *mappings;
}

Napi::Error ErrnoError(Napi::Env env, int err, const char* syscall, const std::string& name, const std::string& detail = "") {
  const char* code = uv_err_name(-err);
  std::string message = std::string(syscall) + "('" + name + "') failed: " + (detail.empty() ? std::strerror(err) : detail) + " (" + code + ")";
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  error.Set("errno", Napi::Number::New(env, -err));
  error.Set("syscall", Napi::String::New(env, syscall));
  error.Set("path", Napi::String::New(env, name));
  return error;
}

bool ReadArgs(const Napi::CallbackInfo& info, const char* fn, bool withLength, std::string* name, size_t* length) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) {
    Napi::TypeError::New(env, std::string(fn) + ": name must be a string").ThrowAsJavaScriptException();
    return false;
  }
  *name = info[0].As<Napi::String>().Utf8Value();
  // POSIX leaves names without a leading slash, or with a second one, implementation-defined.
  if (name->size() < 2 || (*name)[0] != '/' || name->find('/', 1) != std::string::npos || name->size() > 255 ||
      name->find('\0') != std::string::npos) {
    ErrnoError(env, EINVAL, fn, *name, "a segment name is '/' followed by 1 to 254 characters other than '/'").ThrowAsJavaScriptException();
    return false;
  }
  if (!withLength) return true;
  if (info.Length() < 2 || !info[1].IsNumber()) {
    Napi::TypeError::New(env, std::string(fn) + "('" + *name + "'): byteLength must be a number").ThrowAsJavaScriptException();
    return false;
  }
  double value = info[1].As<Napi::Number>().DoubleValue();
  // 2^53 - 1: the largest integer a JS number holds exactly.
  if (!(value >= 1) || value != static_cast<double>(static_cast<int64_t>(value)) || value > 9007199254740991.0) {
    Napi::RangeError::New(env, std::string(fn) + "('" + *name + "'): byteLength must be a positive integer, got " +
                                   info[1].ToString().Utf8Value())
        .ThrowAsJavaScriptException();
    return false;
  }
  *length = static_cast<size_t>(value);
  return true;
}

void Finalize(Napi::Env env, void* data, Mapping* mapping) {
  auto& live = LiveMappings();
  auto found = live.find(data);
  if (found != live.end() && found->second == mapping) {
    live.erase(found);
    munmap(mapping->data, mapping->length);
    Napi::MemoryManagement::AdjustExternalMemory(env, -static_cast<int64_t>(mapping->length));
  }
  delete mapping;
}

Napi::Value Wrap(Napi::Env env, void* data, size_t length) {
  auto* mapping = new Mapping{data, length};
  LiveMappings()[data] = mapping;
  Napi::MemoryManagement::AdjustExternalMemory(env, static_cast<int64_t>(length));
  return Napi::ArrayBuffer::New(env, data, length, Finalize, mapping);
}

Napi::Value Create(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string name;
  size_t length = 0;
  if (!ReadArgs(info, "create", true, &name, &length)) return env.Undefined();
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    ErrnoError(env, errno, "shm_open", name).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  auto fail = [&](int err, const char* call) {
    close(fd);
    shm_unlink(name.c_str());
    ErrnoError(env, err, call, name).ThrowAsJavaScriptException();
    return env.Undefined();
  };
  if (ftruncate(fd, static_cast<off_t>(length)) != 0) return fail(errno, "ftruncate");
  // The segment stays sparse: pages cost memory only once touched, and the
  // transport's ring allocator keeps reusing the lowest ones. Reserving them
  // all (posix_fallocate) would commit byteLength of RAM per worker up front.
  // The price: if the tmpfs fills up later, touching a new page SIGBUSes. At
  // least refuse a segment larger than the free space now (a container's
  // default /dev/shm is 64 MB), so the caller falls back instead.
  struct statvfs fs;
  if (fstatvfs(fd, &fs) == 0 && fs.f_blocks != 0) {
    uint64_t available = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
    if (available < length) {
      close(fd);
      shm_unlink(name.c_str());
      ErrnoError(env, ENOSPC, "create", name,
                 "only " + std::to_string(available) + " bytes free in the shared-memory filesystem, segment needs " + std::to_string(length))
          .ThrowAsJavaScriptException();
      return env.Undefined();
    }
  }
  void* data = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) return fail(errno, "mmap");
  close(fd);
  return Wrap(env, data, length);
}

Napi::Value Open(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string name;
  size_t length = 0;
  if (!ReadArgs(info, "open", true, &name, &length)) return env.Undefined();
  int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    ErrnoError(env, errno, "shm_open", name).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    ErrnoError(env, err, "fstat", name).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  if (static_cast<uint64_t>(st.st_size) < length) {
    close(fd);
    ErrnoError(env, EINVAL, "open", name,
               "segment is " + std::to_string(st.st_size) + " bytes, cannot map " + std::to_string(length))
        .ThrowAsJavaScriptException();
    return env.Undefined();
  }
  void* data = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (data == MAP_FAILED) {
    ErrnoError(env, err, "mmap", name).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  return Wrap(env, data, length);
}

Napi::Value Unlink(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string name;
  if (!ReadArgs(info, "unlink", false, &name, nullptr)) return env.Undefined();
  if (shm_unlink(name.c_str()) != 0) ErrnoError(env, errno, "shm_unlink", name).ThrowAsJavaScriptException();
  return env.Undefined();
}

// Unmaps now instead of at garbage collection. Detaching first turns every
// view over the buffer (Buffers, typed arrays) into a 0-length one, so JS can
// never touch the unmapped pages. A buffer this module did not map, or one
// already closed, is a no-op.
Napi::Value Close(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsArrayBuffer()) {
    Napi::TypeError::New(env, "close: expected an ArrayBuffer from create() or open()").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::ArrayBuffer buffer = info[0].As<Napi::ArrayBuffer>();
  if (buffer.IsDetached()) return env.Undefined();
  void* data = buffer.Data();
  auto& live = LiveMappings();
  auto found = live.find(data);
  if (found == live.end()) return env.Undefined();
  Mapping* mapping = found->second;
  buffer.Detach();
  if (env.IsExceptionPending()) return env.Undefined();
  live.erase(found);
  munmap(mapping->data, mapping->length);
  Napi::MemoryManagement::AdjustExternalMemory(env, -static_cast<int64_t>(mapping->length));
  // The finalizer still runs later and frees `mapping`; it sees it is no longer live.
  return env.Undefined();
}

// ---- allocate(): recycled memory for copies out of shared memory ----
//
// The gateway copies each output out of the segment into memory the caller
// then owns. A fresh malloc of a few hundred KB is an mmap (or heap memory
// that glibc trimmed back to the kernel at the last GC), so the copy
// page-faults on every 4 KiB page: ~150 faults for a 602 KB tensor, which
// cost more than the copy. Here, blocks whose ArrayBuffer has been
// collected go back to a free list by exact size (rounded to 4 KiB) and are
// handed out again with their pages still mapped. Idle blocks are capped at
// kPoolIdleMax bytes; beyond that they are freed. Finalizers may run on any
// thread that loaded the addon (worker_threads), hence the mutex.
//
// V8 is told about the memory the pool holds (live and idle), and only when
// that changes: a recycled block is not news. Reporting every hand-out made
// V8 run a full mark-compact every ~60 round trips of 602 KB (~150 µs per
// round trip on average); without it, scavenges find the dead buffers. Pool
// growth is still reported, so outputs that pile up do force a collection.
constexpr size_t kPoolGranule = 4096;
constexpr size_t kPoolIdleMax = 64 * 1024 * 1024;

struct Pool {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> idle;
  size_t idleBytes = 0;
};

Pool& BlockPool() {
  static auto* pool = new Pool();
  return *pool;
}

void ReturnBlock(Napi::Env env, void* data, size_t* size) {
  size_t length = *size;
  delete size;
  Pool& pool = BlockPool();
  {
    std::lock_guard<std::mutex> lock(pool.mutex);
    if (pool.idleBytes + length <= kPoolIdleMax) {
      pool.idle[length].push_back(data);
      pool.idleBytes += length;
      return;
    }
  }
  std::free(data);
  Napi::MemoryManagement::AdjustExternalMemory(env, -static_cast<int64_t>(length));
}

Napi::Value Allocate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) {
    Napi::TypeError::New(env, "allocate: byteLength must be a number").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  double value = info[0].As<Napi::Number>().DoubleValue();
  if (!(value >= 1) || value != static_cast<double>(static_cast<int64_t>(value)) || value > 9007199254740991.0) {
    Napi::RangeError::New(env, "allocate: byteLength must be a positive integer, got " + info[0].ToString().Utf8Value()).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  size_t requested = static_cast<size_t>(value);
  size_t length = (requested + kPoolGranule - 1) / kPoolGranule * kPoolGranule;
  void* data = nullptr;
  Pool& pool = BlockPool();
  {
    std::lock_guard<std::mutex> lock(pool.mutex);
    auto found = pool.idle.find(length);
    if (found != pool.idle.end() && !found->second.empty()) {
      data = found->second.back();
      found->second.pop_back();
      pool.idleBytes -= length;
    }
  }
  if (data == nullptr) {
    if (posix_memalign(&data, 64, length) != 0) {
      Napi::Error error = Napi::Error::New(env, "allocate(" + std::to_string(requested) + ") failed: out of memory (ENOMEM)");
      error.Set("code", Napi::String::New(env, "ENOMEM"));
      error.ThrowAsJavaScriptException();
      return env.Undefined();
    }
    Napi::MemoryManagement::AdjustExternalMemory(env, static_cast<int64_t>(length));
  }
  // The ArrayBuffer is exactly `requested` bytes; the block behind it is `length`.
  return Napi::ArrayBuffer::New(env, data, requested, ReturnBlock, new size_t(length));
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("create", Napi::Function::New(env, Create, "create"));
  exports.Set("open", Napi::Function::New(env, Open, "open"));
  exports.Set("unlink", Napi::Function::New(env, Unlink, "unlink"));
  exports.Set("close", Napi::Function::New(env, Close, "close"));
  exports.Set("allocate", Napi::Function::New(env, Allocate, "allocate"));
  return exports;
}

}  // namespace

NODE_API_MODULE(operon_native, Init)
