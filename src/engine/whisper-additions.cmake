# Additions to the whisper.cpp that whisper-rs-sys builds: two thread-local switches that
# the calling thread sets around one whisper.cpp call, and one change to the decoder.
#
# - `ctxscribe_whisper_all_logits(bool)`: whisper.cpp's decoder computes the logits of
#   every token of a decoder run but copies out only the last one's
#   (`whisper_batch_prep_legacy` marks it). Checking a draft of several tokens in one
#   decoder run (decode.rs) needs every row; the switch makes the thread's next decoder
#   runs copy them all out.
# - A decoder run whose tokens but the last want no logits (a prompt read before the
#   transcript, the previous window's text, a scored prefix) computes only the last
#   token's: the product with the token embedding (51865 x 512 for base) is nearly half
#   of a token's arithmetic, and whisper.cpp computed it for every token and dropped all
#   rows but one. A 150-token prompt took 186 ms to read, 54-89 ms without them.
# - `ctxscribe_whisper_decoder_type(int)`: whisper.cpp gives every weight matrix the
#   file's one weight type. A decoder step reads all of the decoder's matrices to write
#   one token, so it is bound by the bytes it moves, while the encoder multiplies large
#   batches. The switch (a ggml type, or -1 for the file's) makes the next model load on
#   the thread create the decoder's matrices (token embedding, self- and
#   cross-attention, MLP) in that type; the file must store them so
#   (`crate::model::convert::decoder_matrices_to_q8_0`), or the load fails its size check.
#
# ggml-cpu-variants.cmake (CMAKE_PROJECT_INCLUDE) includes this file, which builds the
# `whisper` target from a copy of src/whisper.cpp with the additions, made by exact text
# match: a whisper.cpp whose text differs stops the build here. It tells cargo
# (`cargo:additions=1`, read by ctxscribe's build script as DEP_WHISPER_ADDITIONS), which
# turns the engine's use of them on; without it the engine decodes token by token and
# keeps the decoder's matrices as stored.
include_guard(GLOBAL)

# Replaces the one occurrence of `find` in `text_var` by `replace`, or stops the build.
function(_ctxscribe_replace_once text_var find replace)
    string(FIND "${${text_var}}" "${find}" first)
    string(FIND "${${text_var}}" "${find}" last REVERSE)
    if(first EQUAL -1 OR NOT first EQUAL last)
        message(FATAL_ERROR "ctxscribe: whisper.cpp does not hold `${find}` exactly once; update src/engine/whisper-additions.cmake")
    endif()
    string(REPLACE "${find}" "${replace}" replaced "${${text_var}}")
    set(${text_var} "${replaced}" PARENT_SCOPE)
endfunction()

function(_ctxscribe_add_to_whisper)
    if(NOT TARGET whisper)
        return()
    endif()
    get_target_property(source_dir whisper SOURCE_DIR)
    file(READ "${source_dir}/whisper.cpp" text)

    # Every decoded token's logits.
    set(prep "static void whisper_batch_prep_legacy(")
    _ctxscribe_replace_once(text "${prep}"
        "static thread_local bool ctxscribe_all_logits = false;\n\nextern \"C\" void ctxscribe_whisper_all_logits(bool on) {\n    ctxscribe_all_logits = on;\n}\n\n${prep}")
    set(last_row "    batch.logits[n_tokens - 1] = 1;\n}")
    _ctxscribe_replace_once(text "${last_row}"
        "    batch.logits[n_tokens - 1] = 1;\n    for (int i = 0; ctxscribe_all_logits && i < n_tokens - 1; ++i) {\n        batch.logits[i] = 1;\n    }\n}")

    # Logits only for the last token where only its row is copied out.
    set(all_rows "    //cur = ggml_view_2d(ctx0, cur, cur->ne[0], 1, cur->nb[1], (cur->ne[1] - 1)*cur->nb[1]);\n")
    _ctxscribe_replace_once(text "${all_rows}"
        "${all_rows}    bool ctxscribe_last_row = !worst_case && n_tokens > 1 && !wctx.params.dtw_token_timestamps;\n    for (int i = 0; ctxscribe_last_row && i < n_tokens - 1; ++i) {\n        ctxscribe_last_row = batch.logits[i] == 0;\n    }\n    if (ctxscribe_last_row) {\n        cur = ggml_view_2d(ctx0, cur, cur->ne[0], 1, cur->nb[1], (cur->ne[1] - 1)*cur->nb[1]);\n    }\n")
    set(copy_row "sizeof(float)*(n_vocab*i), sizeof(float)*n_vocab);")
    _ctxscribe_replace_once(text "${copy_row}"
        "sizeof(float)*(n_vocab*(logits->ne[1] == 1 ? 0 : i)), sizeof(float)*n_vocab);")

    # The decoder's matrices in a type of their own.
    set(load "static bool whisper_model_load(")
    _ctxscribe_replace_once(text "${load}"
        "static thread_local int ctxscribe_decoder_type = -1;\n\nextern \"C\" void ctxscribe_whisper_decoder_type(int type) {\n    ctxscribe_decoder_type = type;\n}\n\n${load}")
    set(conv_type "    const ggml_type vtype = wctx.wtype == GGML_TYPE_F32 ? GGML_TYPE_F32 : GGML_TYPE_F16; // conv type\n")
    _ctxscribe_replace_once(text "${conv_type}"
        "${conv_type}    const ggml_type dtype = ctxscribe_decoder_type < 0 ? wtype : (ggml_type) ctxscribe_decoder_type;\n")
    # The token embedding, then each layer's four self-attention, two MLP and four
    # cross-attention matrices: eleven in all.
    set(matrices 0)
    foreach(system DECODER CROSS)
        set(created "ASR_SYSTEM_${system}, ggml_new_tensor_2d(ctx, wtype,")
        string(REGEX MATCHALL "ASR_SYSTEM_${system}, ggml_new_tensor_2d\\(ctx, wtype," found "${text}")
        list(LENGTH found count)
        math(EXPR matrices "${matrices} + ${count}")
        string(REPLACE "${created}" "ASR_SYSTEM_${system}, ggml_new_tensor_2d(ctx, dtype," text "${text}")
    endforeach()
    if(NOT matrices EQUAL 11)
        message(FATAL_ERROR "ctxscribe: whisper.cpp creates ${matrices} decoder matrices, not 11; update src/engine/whisper-additions.cmake")
    endif()

    set(patched "${CMAKE_BINARY_DIR}/ctxscribe/whisper.cpp")
    # Written only when it changes, so a configure run alone rebuilds nothing.
    file(WRITE "${patched}.new" "${text}")
    configure_file("${patched}.new" "${patched}" COPYONLY)
    get_target_property(sources whisper SOURCES)
    list(TRANSFORM sources REPLACE "^whisper\\.cpp$" "${patched}")
    set_property(TARGET whisper PROPERTY SOURCES "${sources}")
    # Its own directory's headers (whisper-arch.h), found beside the original.
    target_include_directories(whisper PRIVATE "${source_dir}")
    execute_process(COMMAND ${CMAKE_COMMAND} -E echo "cargo:additions=1")
endfunction()

cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _ctxscribe_add_to_whisper)
