# Sourced by scripts/llama_cpp_python.sh and scripts/llama_server.sh: how llama.cpp is compiled for the engine tests.
# Portable x86-64: llama.cpp's default GGML_NATIVE=ON builds with -march=native, which on a Xeon with AMX compiles
# ggml's AMX kernels, and those fault (SIGSEGV at ldtilecfg) in VMs that do not grant a process the AMX tile state.
# So: no -march=native, the AVX2-era instructions every x86-64 machine of this kind has switched on explicitly
# (llama.cpp's own "haswell" CPU variant), AVX-512 and AMX off. Elsewhere (arm64) the native build is kept.
if [ "$(uname -m)" = "x86_64" ]; then
  LLAMA_CMAKE_FLAGS="-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_BMI2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
else
  LLAMA_CMAKE_FLAGS=""
fi
# A build's identity: the flags' hash names the cached llama-server binary and the llama-cpp-python wheel, so a
# machine that built them another way (a native build from before) builds them again instead of reusing it.
LLAMA_BUILD_STAMP="$(printf '%s' "$LLAMA_CMAKE_FLAGS" | sha256sum | cut -c1-12)"
export LLAMA_CMAKE_FLAGS LLAMA_BUILD_STAMP
