// attack: throw undefined
// phase: producer
// expect: logic_error:threw a undefined
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    throw undefined;
  } } },
});
