// attack: Function.prototype.call override
// phase: producer
// expect: logic_error:TypeError
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    Function.prototype.call = () => 'forged';
    return 1;
  } } },
});
