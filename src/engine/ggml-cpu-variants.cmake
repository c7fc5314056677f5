# Portable CPU kernels for the whisper.cpp that whisper-rs-sys builds.
#
# whisper-rs-sys links whisper.cpp and ggml statically and passes every CMAKE_*
# environment variable to CMake, so `.cargo/config.toml` names this file as
# CMAKE_PROJECT_INCLUDE, which CMake runs after each project() call. It
#   1. builds the CPU backend that is linked in for the x86-64-v2 floor (SSE4.2) instead
#      of -march=native, so the artifacts start on any x86-64-v2 CPU;
#   2. builds ggml's CPU backend variants (AVX, AVX2, AVX-512, AVX-512 VNNI with and
#      without VBMI, AVX-512 BF16, AMX) as loadable modules, each holding its own copy of
#      ggml-base, next to the build;
#   3. tells cargo where they are (`cargo:cpu_variants_dir=...`, read by ctxscribe's
#      build script as DEP_WHISPER_CPU_VARIANTS_DIR), which embeds them; at run time the
#      engine loads the best one the CPU supports (kernels.rs beside this file).
# CTXSCRIBE_NATIVE=1 in the environment keeps whisper-rs-sys's -march=native build.
include_guard(GLOBAL)

# On every platform: additions to whisper.cpp (see the file).
include("${CMAKE_CURRENT_LIST_DIR}/whisper-additions.cmake")

if("$ENV{CTXSCRIBE_NATIVE}" STREQUAL "1" OR NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    return()
endif()

set(GGML_NATIVE OFF CACHE BOOL "" FORCE)
foreach(feat AVX AVX_VNNI AVX2 BMI2 FMA F16C AVX512 AVX512_VBMI AVX512_VNNI AVX512_BF16 AMX_TILE AMX_INT8 AMX_BF16)
    set(GGML_${feat} OFF CACHE BOOL "" FORCE)
endforeach()
set(GGML_SSE42 ON CACHE BOOL "" FORCE)

# ggml/src's first `${target}` after it added the linked-in CPU backend adds the variants,
# in that directory's scope (its sources are relative to it), with ggml's own function.
function(_ctxscribe_add_cpu_variants variable access)
    if(NOT access STREQUAL "READ_ACCESS" OR NOT CMAKE_CURRENT_SOURCE_DIR MATCHES "/ggml/src$"
       OR NOT TARGET ggml-cpu OR TARGET ggml-cpu-sandybridge)
        return()
    endif()
    get_property(adding GLOBAL PROPERTY _ctxscribe_adding_variants)
    if(adding)
        return()
    endif()
    set_property(GLOBAL PROPERTY _ctxscribe_adding_variants ON)
    # Modules, not archives: ggml_add_backend_library reads GGML_BACKEND_DL in this scope.
    set(GGML_BACKEND_DL ON)
    ggml_add_cpu_backend_variant(sandybridge    SSE42 AVX)
    ggml_add_cpu_backend_variant(haswell        SSE42 AVX F16C FMA AVX2 BMI2)
    ggml_add_cpu_backend_variant(alderlake      SSE42 AVX F16C FMA AVX2 BMI2 AVX_VNNI)
    ggml_add_cpu_backend_variant(skylakex       SSE42 AVX F16C FMA AVX2 BMI2 AVX512)
    ggml_add_cpu_backend_variant(cascadelake    SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VNNI)
    ggml_add_cpu_backend_variant(icelake        SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VBMI AVX512_VNNI)
    ggml_add_cpu_backend_variant(zen4           SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VBMI AVX512_VNNI AVX512_BF16)
    ggml_add_cpu_backend_variant(sapphirerapids SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VBMI AVX512_VNNI AVX512_BF16 AMX_TILE AMX_INT8)
    foreach(tag sandybridge haswell alderlake skylakex cascadelake icelake zen4 sapphirerapids)
        # Each module binds its own copies of ggml's symbols, whatever the host exports.
        target_link_options(ggml-cpu-${tag} PRIVATE "-Wl,-Bsymbolic")
    endforeach()
    execute_process(COMMAND ${CMAKE_COMMAND} -E echo "cargo:cpu_variants_dir=${CMAKE_RUNTIME_OUTPUT_DIRECTORY}")
    set_property(GLOBAL PROPERTY _ctxscribe_adding_variants OFF)
endfunction()

variable_watch(target _ctxscribe_add_cpu_variants)
