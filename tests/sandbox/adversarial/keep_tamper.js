// attack: overwriting Keep and console
// phase: producer
// expect: logic_error:TypeError
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    Keep.workflow = () => 1;
    return 1;
  } } },
});
