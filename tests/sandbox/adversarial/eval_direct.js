// attack: direct eval
// phase: producer
// expect: logic_error:ReferenceError
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    return eval('1 + 1');
  } } },
});
