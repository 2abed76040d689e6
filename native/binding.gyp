{
  "targets": [
    {
      "target_name": "operon_native",
      "sources": ["src/shm.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_CPP_EXCEPTIONS"],
      "cflags_cc": ["-std=c++17", "-O2", "-Wall", "-Wextra"],
      "conditions": [
        ["OS=='linux'", { "libraries": ["-lrt"] }]
      ]
    },
    {
      "target_name": "operon_tritonhost",
      "sources": ["src/tritonserver-host.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "tritonserver/include"],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_CPP_EXCEPTIONS"],
      "cflags_cc": ["-std=c++17", "-O2", "-Wall", "-Wextra"],
      "conditions": [
        ["OS=='linux'", { "libraries": ["-ldl"] }]
      ]
    },
    {
      "target_name": "operon_nvml",
      "sources": ["src/nvml.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_CPP_EXCEPTIONS"],
      "cflags_cc": ["-std=c++17", "-O2", "-Wall", "-Wextra"],
      "conditions": [
        ["OS=='linux'", { "libraries": ["-ldl"] }]
      ]
    }
  ]
}
