# Every decoded token's logits from the whisper.cpp that whisper-rs-sys builds.
#
# whisper.cpp's decoder computes the logits of every token of a decoder run but copies
# out only the last one's (`whisper_batch_prep_legacy` marks it). Checking a draft of
# several tokens in one decoder run (decode.rs) needs every row. ggml-cpu-variants.cmake
# (CMAKE_PROJECT_INCLUDE) includes this file, which builds the `whisper` target from a
# copy of src/whisper.cpp with one addition, `ctxscribe_whisper_all_logits(bool)`: it
# makes the calling thread's next decoder runs copy out every row. It tells cargo
# (`cargo:all_logits=1`, read by ctxscribe's build script as DEP_WHISPER_ALL_LOGITS),
# which turns the engine's use of it on; without it the engine decodes token by token.
include_guard(GLOBAL)

function(_ctxscribe_copy_every_logits_row)
    if(NOT TARGET whisper)
        return()
    endif()
    get_target_property(source_dir whisper SOURCE_DIR)
    file(READ "${source_dir}/whisper.cpp" text)
    set(prep "static void whisper_batch_prep_legacy(")
    set(last_row "    batch.logits[n_tokens - 1] = 1;\n}")
    string(FIND "${text}" "${prep}" at_prep)
    string(FIND "${text}" "${last_row}" at_last_row)
    string(FIND "${text}" "${last_row}" at_last_row_too REVERSE)
    if(at_prep EQUAL -1 OR at_last_row LESS at_prep OR NOT at_last_row EQUAL at_last_row_too)
        message(FATAL_ERROR "ctxscribe: whisper.cpp's whisper_batch_prep_legacy is not as expected; update src/engine/whisper-all-logits.cmake")
    endif()
    string(REPLACE "${prep}"
        "static thread_local bool ctxscribe_all_logits = false;\n\nextern \"C\" void ctxscribe_whisper_all_logits(bool on) {\n    ctxscribe_all_logits = on;\n}\n\n${prep}"
        text "${text}")
    string(REPLACE "${last_row}"
        "    batch.logits[n_tokens - 1] = 1;\n    for (int i = 0; ctxscribe_all_logits && i < n_tokens - 1; ++i) {\n        batch.logits[i] = 1;\n    }\n}"
        text "${text}")
    set(patched "${CMAKE_BINARY_DIR}/ctxscribe/whisper.cpp")
    # Written only when it changes, so a configure run alone rebuilds nothing.
    file(WRITE "${patched}.new" "${text}")
    configure_file("${patched}.new" "${patched}" COPYONLY)
    get_target_property(sources whisper SOURCES)
    list(TRANSFORM sources REPLACE "^whisper\\.cpp$" "${patched}")
    set_property(TARGET whisper PROPERTY SOURCES "${sources}")
    # Its own directory's headers (whisper-arch.h), found beside the original.
    target_include_directories(whisper PRIVATE "${source_dir}")
    execute_process(COMMAND ${CMAKE_COMMAND} -E echo "cargo:all_logits=1")
endfunction()

cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _ctxscribe_copy_every_logits_row)
