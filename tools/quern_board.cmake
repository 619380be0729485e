# quern-board: inspect event files and export their scalars (tools/quern_board/).
find_package(Boost REQUIRED COMPONENTS program_options)
file(GLOB quern_board_sources CONFIGURE_DEPENDS
     ${CMAKE_CURRENT_LIST_DIR}/quern_board/*.cpp)
add_executable(quern-board ${quern_board_sources})
target_link_libraries(quern-board PRIVATE quern::logging Boost::program_options
                                          quern_warnings)
