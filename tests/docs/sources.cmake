# Documentation checks; they read the source tree and need no build. Like the
# other tests/*/sources.cmake, this file is included by tests/CMakeLists.txt,
# so CMAKE_CURRENT_LIST_DIR is tests/docs and PROJECT_SOURCE_DIR the root.
#   docs.semantic_ids     every statement id cited (Q-37, CO-8, ...) is
#                         defined in docs/semantics.md
#   docs.no_outside_refs  no file points at documents outside the repository
add_test(NAME docs.semantic_ids
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check_semantic_ids.sh ${PROJECT_SOURCE_DIR})
add_test(NAME docs.no_outside_refs
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check_no_outside_refs.sh ${PROJECT_SOURCE_DIR})
#   docs.snippets         each marked code block is the example file or the
#                         fragment of tests/docs/fragments.cpp it names, and
#                         no C++ block is unmarked
add_test(NAME docs.snippets
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check_snippets.sh ${PROJECT_SOURCE_DIR})
#   docs.seed_lengths     the seed programs' examples are at most 1.2 x
#                         TensorFlow's lines
add_test(NAME docs.seed_lengths
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check_seed_lengths.sh ${PROJECT_SOURCE_DIR})
# The docs' code that is not a whole program, compiled in its context: a
# fragment that stops compiling breaks the build (tests/docs/fragments.cpp).
add_library(quern_doc_fragments OBJECT ${CMAKE_CURRENT_LIST_DIR}/fragments.cpp)
target_link_libraries(quern_doc_fragments PRIVATE quern::quern quern_warnings)
set_tests_properties(docs.semantic_ids docs.no_outside_refs docs.snippets
                     docs.seed_lengths PROPERTIES LABELS docs)
