// attack: cyclic result
// phase: producer
// expect: logic_error:TypeError
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    const a = {};
    a.a = a;
    return a;
  } } },
});
