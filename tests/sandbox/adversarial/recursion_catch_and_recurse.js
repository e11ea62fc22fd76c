// attack: catching the overflow and recursing again
// phase: producer
// expect: limit_exceeded:cpu_time
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    function f() { try { f(); } catch (e) { f(); } }
    f();
  } } },
});
