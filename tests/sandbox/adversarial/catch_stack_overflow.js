// attack: catching a stack overflow and finishing normally
// phase: producer
// expect: completed:"recovered"
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    function f() { return f() + 1; }
    try { f(); } catch (e) { return 'recovered'; }
  } } },
});
