// attack: replacing JSON.stringify
// phase: producer
// expect: logic_error:TypeError
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    JSON.stringify = () => '"forged"';
    return 1;
  } } },
});
