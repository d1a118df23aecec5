// The ROWS x COLS grid of processing elements (PEs). PE (r, c) is one int8 x
// int8 multiplier and one int32 adder (wrapping, as the ISA specifies) with
// six registers: a_q (the input, passed right), s_q (the input's weight-buffer
// select bit, passed right with it), v_q (the vertical stream, passed down),
// w_q[0] and w_q[1] (the two stationary weight buffers) and acc_q (the kept
// sum).
//
// Weight-stationary (os_mode = 0): v carries partial sums,
//   v_q[r][c] <= v_in + a_in * w_q[s_in][r][c]
// so each input row multiplies with the buffer it was issued for, while the
// weight loader writes the other one. A buffer is written column by column on
// a diagonal (column c of weight row t one cycle after column c - 1): the
// load follows the last wave that still reads the old weights.
// Output-stationary (os_mode = 1): v carries the (sign-extended) weights and
// each PE keeps its sum: acc_q[r][c] <= acc_q[r][c] + a_in * v_in[7:0].
//
// Row r's input enters at the left (a_left lane r), column c's vertical stream
// at the top (v_top lane c) and leaves at the bottom (v_bottom lane c). The
// kept sums of row rd_row are read out through acc_row (OS drain). The grid is
// written as loops over register arrays (next state, then one register stage)
// rather than ROWS x COLS module instances: the same hardware, and a Verilator
// model that compiles in seconds (docs/npu/rtl.md, "Build").
module ember_me_array #(
    parameter int ROWS  = 16,
    parameter int COLS  = 16,
    parameter int IN_W  = 8,
    parameter int ACC_W = 32,
    localparam int RW = ROWS > 1 ? $clog2(ROWS) : 1
) (
    input  logic             clk,
    input  logic             os_mode,
    input  logic             clear,            // OS: zero every kept sum
    // WS weight load, per column (already skewed): PE (w_ld_row[c], c) of
    // buffer w_ld_buf[c] takes w_row[c].
    input  logic             w_ld_valid[COLS],
    input  logic [   RW-1:0] w_ld_row  [COLS],
    input  logic             w_ld_buf  [COLS],
    input  logic [ IN_W-1:0] w_row     [COLS],
    input  logic [ IN_W-1:0] a_left    [ROWS],
    input  logic             s_left    [ROWS],  // WS: the buffer lane r's input multiplies with
    input  logic [ACC_W-1:0] v_top     [COLS],
    output logic [ACC_W-1:0] v_bottom  [COLS],
    input  logic [   RW-1:0] rd_row,
    output logic [ACC_W-1:0] acc_row   [COLS]
);
  typedef logic signed [IN_W-1:0] in_t;
  typedef logic signed [ACC_W-1:0] acc_t;

  in_t a_q[ROWS][COLS], w_q[2][ROWS][COLS];
  logic s_q[ROWS][COLS];
  acc_t v_q[ROWS][COLS], acc_q[ROWS][COLS];
  /*verilator tracing_off*/
  in_t a_d[ROWS][COLS], w_d[2][ROWS][COLS], a_in[ROWS][COLS];
  logic s_d[ROWS][COLS], s_in[ROWS][COLS];
  acc_t v_d[ROWS][COLS], acc_d[ROWS][COLS], v_in[ROWS][COLS];
  /*verilator tracing_on*/

  // One PE's product, sign-extended to the accumulator width.
  function automatic acc_t mac_product(in_t a, in_t b);
    logic signed [2*IN_W-1:0] p;
    p = a * b;
    return {{(ACC_W - 2 * IN_W) {p[2*IN_W-1]}}, p};
  endfunction

  // The dataflow test sits outside the PE loops: one simple loop nest per mode.
  always_comb begin
    for (int r = 0; r < ROWS; r++) begin
      a_in[r][0] = a_left[r];
      s_in[r][0] = s_left[r];
      for (int c = 1; c < COLS; c++) begin
        a_in[r][c] = a_q[r][c-1];
        s_in[r][c] = s_q[r][c-1];
      end
    end
    for (int c = 0; c < COLS; c++) begin
      v_in[0][c] = v_top[c];
      for (int r = 1; r < ROWS; r++) v_in[r][c] = v_q[r-1][c];
    end
    if (os_mode) begin
      for (int r = 0; r < ROWS; r++) begin
        for (int c = 0; c < COLS; c++) begin
          a_d[r][c]   = a_in[r][c];
          s_d[r][c]   = s_in[r][c];
          w_d[0][r][c] = w_q[0][r][c];
          w_d[1][r][c] = w_q[1][r][c];
          v_d[r][c]   = v_in[r][c];
          acc_d[r][c] = clear ? '0 : acc_q[r][c] + mac_product(a_in[r][c], v_in[r][c][IN_W-1:0]);
        end
      end
    end else begin
      for (int r = 0; r < ROWS; r++) begin
        for (int c = 0; c < COLS; c++) begin
          a_d[r][c] = a_in[r][c];
          s_d[r][c] = s_in[r][c];
          for (int b = 0; b < 2; b++)
            w_d[b][r][c] = w_ld_valid[c] && w_ld_row[c] == RW'(r) && w_ld_buf[c] == b[0] ?
                w_row[c] : w_q[b][r][c];
          v_d[r][c]   = v_in[r][c] + mac_product(a_in[r][c], w_q[s_in[r][c]][r][c]);
          acc_d[r][c] = clear ? '0 : acc_q[r][c];
        end
      end
    end
  end

  always_ff @(posedge clk) begin
    a_q   <= a_d;
    s_q   <= s_d;
    w_q   <= w_d;
    v_q   <= v_d;
    acc_q <= acc_d;
  end

  for (genvar c = 0; c < COLS; c++) begin : g_edge
    assign v_bottom[c] = v_q[ROWS-1][c];
    assign acc_row[c]  = acc_q[rd_row][c];
  end
endmodule
