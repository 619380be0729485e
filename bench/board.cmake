# bench_board: quern-board html and serve on 8 runs x 4 tags x 100,000
# points: time to write the page, its size, and the browser's time to the
# first chart (read back from the page). Needs chromium-headless-shell.
if(TARGET quern-board)
  add_executable(quern_bench_board ${CMAKE_CURRENT_LIST_DIR}/board.cpp)
  target_link_libraries(quern_bench_board PRIVATE quern::logging quern_command_line
                                                  quern_warnings)
  target_compile_definitions(quern_bench_board PRIVATE
    QUERN_BOARD_PATH="$<TARGET_FILE:quern-board>")
  add_dependencies(quern_bench_board quern-board)
  set_target_properties(quern_bench_board PROPERTIES OUTPUT_NAME bench_board
    RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
  # Its command line: --help answers, a bad option is named.
  if(QUERN_BUILD_TESTS AND BUILD_TESTING)
    add_test(NAME bench_board.help COMMAND quern_bench_board --help)
    set_tests_properties(bench_board.help PROPERTIES PASS_REGULAR_EXPRESSION "--points")
    add_test(NAME bench_board.bad_option COMMAND quern_bench_board --no-such-option)
    set_tests_properties(bench_board.bad_option PROPERTIES PASS_REGULAR_EXPRESSION
      "bench_board: unrecognised option '--no-such-option' \\(see --help\\)")
  endif()
endif()
