# quern-board's html and serve pages checked in a real browser: Debian's
# chromium-headless-shell driven over its DevTools pipe by a node script
# (node's own modules only). A missing browser fails these tests.

# Writes the tests' log directories with quern's writer (no checked-in files).
add_executable(quern_test_board_logdir ${CMAKE_CURRENT_LIST_DIR}/make_logdir.cpp)
# quern::input: the telemetry summaries exactly as input_summaries writes them.
target_link_libraries(quern_test_board_logdir PRIVATE quern::logging quern::input
                                                      quern_warnings)

if(TARGET quern-board)
  # quern-board's arithmetic without a browser (its sources compiled in), and
  # its command line run as a user runs it (board_test.cpp).
  quern_add_test_suite(quern_test_board
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/board_unit_test.cpp
            ${CMAKE_CURRENT_LIST_DIR}/board_purge_test.cpp
            ${CMAKE_CURRENT_LIST_DIR}/board_test.cpp
            ${PROJECT_SOURCE_DIR}/tools/quern_board/logdir.cpp
            ${PROJECT_SOURCE_DIR}/tools/quern_board/text.cpp
    LIBS quern::logging)
  target_include_directories(quern_test_board PRIVATE ${PROJECT_SOURCE_DIR}/tools/quern_board
                                                      ${PROJECT_SOURCE_DIR}/tools/common
                                                      ${PROJECT_SOURCE_DIR}/tests/logging)
  # Compiled apart: its helper `board(...)` would meet quern-board's own
  # namespace `board` in a unity batch.
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/board_test.cpp
                              PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  add_dependencies(quern_test_board quern-board)
  target_compile_definitions(quern_test_board PRIVATE
    QUERN_BOARD_PATH="$<TARGET_FILE:quern-board>"
    QUERN_LOGGING_GOLDEN_DIR="${PROJECT_SOURCE_DIR}/tests/logging/golden")

  set(quern_board_test_out ${CMAKE_CURRENT_BINARY_DIR}/board)
  set(quern_board_test_args
      --board $<TARGET_FILE:quern-board>
      --helper $<TARGET_FILE:quern_test_board_logdir>
      --chromium chromium-headless-shell)
  foreach(mode html serve)
    add_test(NAME board.browser.${mode}
             COMMAND node ${CMAKE_CURRENT_LIST_DIR}/board_browser_test.js ${mode}
                     ${quern_board_test_args} --out ${quern_board_test_out}/${mode})
    set_tests_properties(board.browser.${mode} PROPERTIES TIMEOUT 300 LABELS browser)
  endforeach()
  # The flagship's report (make demo's csv_pipeline run); the example's
  # target may carry the quern_example_ prefix.
  set(quern_board_flagship "")
  foreach(example quern_example_csv_pipeline csv_pipeline)
    if(TARGET ${example} AND NOT quern_board_flagship)
      set(quern_board_flagship ${example})
    endif()
  endforeach()
  if(quern_board_flagship)
    add_test(NAME board.browser.flagship
             COMMAND node ${CMAKE_CURRENT_LIST_DIR}/board_browser_test.js flagship
                     ${quern_board_test_args}
                     --example $<TARGET_FILE:${quern_board_flagship}>
                     --out ${quern_board_test_out}/flagship)
    set_tests_properties(board.browser.flagship PROPERTIES TIMEOUT 300 LABELS browser)
  elseif(QUERN_BUILD_EXAMPLES)
    # Examples are built but the flagship's target is not found: say so
    # rather than leave its report untested.
    add_test(NAME board.browser.flagship
             COMMAND bash -c "echo 'no csv_pipeline example target (tests/board/sources.cmake looks for quern_example_csv_pipeline or csv_pipeline)'; exit 1")
  endif()
endif()
