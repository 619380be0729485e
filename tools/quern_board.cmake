# quern-board: inspect event files, export their scalars, and chart them as
# one self-contained HTML page or on 127.0.0.1 (tools/quern_board/).
find_package(Boost REQUIRED COMPONENTS program_options)
find_package(Threads REQUIRED)

# The charts are drawn with Debian's libjs-dygraphs, embedded into the
# binary so that every page is one file that needs no network.
set(QUERN_DYGRAPHS_DIR /usr/share/javascript/dygraphs CACHE PATH
    "Where Debian's libjs-dygraphs package installs dygraph.min.js")
foreach(f dygraph.min.js dygraph.min.css)
  if(NOT EXISTS ${QUERN_DYGRAPHS_DIR}/${f})
    message(FATAL_ERROR
      "quern-board needs ${QUERN_DYGRAPHS_DIR}/${f} from Debian's libjs-dygraphs "
      "package: install it with `apt-get install libjs-dygraphs` "
      "(tools/install-deps.sh does), or set QUERN_DYGRAPHS_DIR")
  endif()
endforeach()

# Text summaries are markdown, rendered as TensorBoard renders them with
# Debian's libjs-marked and made safe (no HTML or script of a summary runs)
# with DOMPurify (node-dompurify's browser build), both embedded the same way.
set(QUERN_MARKED_DIR /usr/share/javascript/marked CACHE PATH
    "Where Debian's libjs-marked package installs marked.min.js")
set(QUERN_DOMPURIFY_DIR /usr/share/nodejs/dompurify/dist CACHE PATH
    "Where Debian's node-dompurify package installs purify.min.js")
foreach(f ${QUERN_MARKED_DIR}/marked.min.js:libjs-marked
          ${QUERN_DOMPURIFY_DIR}/purify.min.js:node-dompurify)
  string(REGEX REPLACE ":[^:]*$" "" file ${f})
  string(REGEX REPLACE "^.*:" "" package ${f})
  if(NOT EXISTS ${file})
    message(FATAL_ERROR
      "quern-board needs ${file} from Debian's ${package} package: install it with "
      "`apt-get install ${package}` (tools/install-deps.sh does), or set "
      "QUERN_MARKED_DIR / QUERN_DOMPURIFY_DIR")
  endif()
endforeach()

# The pipeline view (docs/board.md) is laid out by dagre (Debian's
# node-dagre-layout; its browser build bundles graphlib and lodash), embedded
# the same way: the page draws the boxes and arrows where dagre puts them.
set(QUERN_DAGRE_DIR /usr/share/nodejs/dagre/dist CACHE PATH
    "Where Debian's node-dagre-layout package installs dagre.min.js")
if(NOT EXISTS ${QUERN_DAGRE_DIR}/dagre.min.js)
  message(FATAL_ERROR
    "quern-board needs ${QUERN_DAGRE_DIR}/dagre.min.js from Debian's node-dagre-layout "
    "package: install it with `apt-get install node-dagre-layout` "
    "(tools/install-deps.sh does), or set QUERN_DAGRE_DIR")
endif()

set(quern_board_dir ${CMAKE_CURRENT_LIST_DIR}/quern_board)
set(quern_board_embedded ${CMAKE_CURRENT_BINARY_DIR}/quern_board_embedded.cpp)
set(quern_board_embed_inputs
    dygraph_js=${QUERN_DYGRAPHS_DIR}/dygraph.min.js
    dygraph_css=${QUERN_DYGRAPHS_DIR}/dygraph.min.css
    marked_js=${QUERN_MARKED_DIR}/marked.min.js
    purify_js=${QUERN_DOMPURIFY_DIR}/purify.min.js
    dagre_js=${QUERN_DAGRE_DIR}/dagre.min.js
    page_js=${quern_board_dir}/page/page.js
    page_css=${quern_board_dir}/page/page.css)
# '|' separates the inputs: a ';' would not survive the command line.
string(REPLACE ";" "|" quern_board_embed_inputs_arg "${quern_board_embed_inputs}")
add_custom_command(
  OUTPUT ${quern_board_embedded}
  COMMAND ${CMAKE_COMMAND} -DOUTPUT=${quern_board_embedded}
          -DINPUTS=${quern_board_embed_inputs_arg} -P ${quern_board_dir}/embed.cmake
  DEPENDS ${quern_board_dir}/embed.cmake ${QUERN_DYGRAPHS_DIR}/dygraph.min.js
          ${QUERN_DYGRAPHS_DIR}/dygraph.min.css ${QUERN_MARKED_DIR}/marked.min.js
          ${QUERN_DOMPURIFY_DIR}/purify.min.js ${QUERN_DAGRE_DIR}/dagre.min.js
          ${quern_board_dir}/page/page.js
          ${quern_board_dir}/page/page.css
  COMMENT "Embedding dygraphs, marked, DOMPurify, dagre and the quern-board page"
  VERBATIM)

file(GLOB quern_board_sources CONFIGURE_DEPENDS ${quern_board_dir}/*.cpp)
add_executable(quern-board ${quern_board_sources} ${quern_board_embedded})
target_include_directories(quern-board PRIVATE ${quern_board_dir})
# Boost.Beast and Boost.Asio are header-only (libboost1.74-dev).
target_link_libraries(quern-board PRIVATE quern::logging quern_command_line Boost::program_options
                                          Boost::headers Threads::Threads quern_warnings)
